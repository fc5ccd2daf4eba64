import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';

/**
 * A backup's manifest (`manifest.json`, written last: a folder without one is not a backup) and
 * the files it names, each with its size and SHA-256, as `pnpm admin backup` writes them and
 * `verify` and `restore` check them (docs/deployment.md#backups-and-restore).
 */
export const MANIFEST_FILE = 'manifest.json';
const FORMAT = 'school-messaging-backup';
const FORMAT_VERSION = 1;

/**
 * The only paths a backup holds: a manifest is read from a folder anyone may have handed over, and
 * a path such as `../../etc/…` must never be copied or written.
 */
const FILE_PATH = /^(school-messaging\.db|code-encryption\.key|books\/[0-9a-f]{2}\/[0-9a-f]{64}\.pdf)$/;

const fileSchema = z
  .object({
    path: z.string().regex(FILE_PATH, 'not a file a backup holds'),
    size: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .refine((f) => !f.path.startsWith('books/') || f.path === bookEntry(f.sha256), {
    message: "a book's path is its SHA-256",
  });

const manifestSchema = z.object({
  format: z.literal(FORMAT),
  formatVersion: z.literal(FORMAT_VERSION),
  /** The moment the database was copied as of (ISO 8601). */
  createdAt: z.string(),
  /** The release that took it (apps/server/package.json). */
  serverVersion: z.string(),
  /** The database's last migration. */
  migration: z.string(),
  store: z.literal('sqlite'),
  withKey: z.boolean(),
  counts: z.object({
    calls: z.number(),
    users: z.number(),
    books: z.number(),
    sealedTexts: z.number(),
    secondFactors: z.number(),
  }),
  files: z.array(fileSchema),
});

export type Manifest = z.infer<typeof manifestSchema>;
export type ManifestFile = z.infer<typeof fileSchema>;

/** A book's path in a backup, as under DATA_DIR: books/<first two hex digits>/<sha256>.pdf. */
export function bookEntry(sha256: string): string {
  return `books/${sha256.slice(0, 2)}/${sha256}.pdf`;
}

export const newManifest = (fields: Omit<Manifest, 'format' | 'formatVersion'>): Manifest => ({
  format: FORMAT,
  formatVersion: FORMAT_VERSION,
  ...fields,
});

/** A folder that is not a backup, or one whose files do not match its manifest. */
export class DamagedBackupError extends Error {
  override name = 'DamagedBackupError';
}

/** The manifest of the backup in `dir`; DamagedBackupError when there is none or it is not one. */
export function readManifest(dir: string): Manifest {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, MANIFEST_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw new DamagedBackupError(
      `${dir} holds no ${MANIFEST_FILE}: it is not a backup, or one that did not finish.`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new DamagedBackupError(`${path.join(dir, MANIFEST_FILE)} is not JSON: the backup is damaged.`);
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'the manifest';
    const version = (json as { formatVersion?: unknown } | null)?.formatVersion;
    throw new DamagedBackupError(
      typeof version === 'number' && version > FORMAT_VERSION
        ? `${dir} was written by a newer release (backup format ${version}; this one reads ${FORMAT_VERSION}).`
        : `${path.join(dir, MANIFEST_FILE)} is not a backup's manifest (${where}: ${issue?.message}).`,
    );
  }
  return parsed.data;
}

/** Writes the manifest (mode 0600) and makes it and the folder durable. */
export async function writeManifest(dir: string, manifest: Manifest): Promise<void> {
  const file = path.join(dir, MANIFEST_FILE);
  const handle = await fs.promises.open(file, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(manifest, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await syncFolder(dir);
}

/** A file's size and SHA-256, read as a stream. */
export async function hashFile(file: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of fs.createReadStream(file)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest('hex') };
}

/**
 * Copies `from` to the new file `to` (mode 0600, its folders 0700), hashing what it reads, and
 * makes the copy durable: its size and SHA-256 are those of the bytes written.
 */
export async function copyHashed(from: string, to: string): Promise<{ size: number; sha256: string }> {
  await fs.promises.mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
  const hash = createHash('sha256');
  let size = 0;
  await pipeline(
    fs.createReadStream(from),
    async function* (chunks: AsyncIterable<Buffer>) {
      for await (const chunk of chunks) {
        hash.update(chunk);
        size += chunk.length;
        yield chunk;
      }
    },
    // `flush`: synced to the disk before it is closed.
    fs.createWriteStream(to, { flags: 'wx', mode: 0o600, flush: true }),
  );
  return { size, sha256: hash.digest('hex') };
}

/** Where a file does not match its manifest entry, in words; undefined when it does. */
export function mismatch(entry: ManifestFile, found: { size: number; sha256: string }): string | undefined {
  if (found.size !== entry.size)
    return `${entry.path}: ${found.size} bytes, the manifest says ${entry.size} (its checksum does not match)`;
  if (found.sha256 !== entry.sha256)
    return `${entry.path}: its SHA-256 is ${found.sha256}, the manifest says ${entry.sha256}`;
  return undefined;
}

/** Every file of the backup in `dir` against its manifest: the problems, in words (none: intact). */
export async function checkFiles(dir: string, manifest: Manifest): Promise<string[]> {
  const problems: string[] = [];
  for (const entry of manifest.files) {
    try {
      const problem = mismatch(entry, await hashFile(path.join(dir, entry.path)));
      if (problem) problems.push(problem);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      problems.push(`${entry.path}: missing`);
    }
  }
  return problems;
}

/** The problems as one message, naming at most ten files. */
export function describeProblems(dir: string, problems: readonly string[]): string {
  const shown = problems.slice(0, 10).map((p) => `  ${p}`);
  if (problems.length > shown.length) shown.push(`  … and ${problems.length - shown.length} more`);
  return `The backup in ${dir} does not match its manifest:\n${shown.join('\n')}`;
}

/** Makes a folder's entries (new files, renames) durable. */
export async function syncFolder(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** What a folder holds (its names), `lost+found` aside (a mount point's); undefined when absent. */
export function entriesIn(dir: string): string[] | undefined {
  try {
    return fs.readdirSync(dir).filter((name) => name !== 'lost+found');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** `1 book`, `12 books`. */
export const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
