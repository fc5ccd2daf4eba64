/**
 * `pnpm admin backup DIR`: a consistent copy of the embedded store (SQLite in DATA_DIR) taken
 * while the server takes calls: the database as of one moment, the books it names, and the code
 * key only when asked, with a manifest of every file's size and SHA-256
 * (docs/deployment.md#backups-and-restore).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bookPath } from '../books/blobs.js';
import { KEY_FILE } from '../secrets/sealer.js';
import { backUpSqlite, describeSqliteCopy, NoDatabaseError, SQLITE_FILE } from '../store/index.js';
import {
  bookEntry,
  copyHashed,
  count,
  entriesIn,
  hashFile,
  type ManifestFile,
  newManifest,
  syncFolder,
  writeManifest,
} from './backup-manifest.js';
import { CommandError, EXIT } from './command-error.js';

export interface BackupOptions {
  /** Where the backup goes: a new or empty folder. */
  readonly dir: string;
  readonly dataDir: string;
  /** --with-key: the code key file goes in too. */
  readonly withKey: boolean;
  /** CODE_ENCRYPTION_KEY is set: the key is in the configuration, not in DATA_DIR. */
  readonly keyInConfig: boolean;
  readonly out: (text: string) => void;
}

export async function backUp(options: BackupOptions): Promise<void> {
  const { dir, dataDir } = options;
  const started = Date.now();
  const inside = path.relative(dataDir, dir);
  if (!inside.startsWith('..') && !path.isAbsolute(inside))
    throw new CommandError(
      `${dir} is inside DATA_DIR (${dataDir}): keep backups elsewhere, where losing DATA_DIR does not lose them too.`,
      EXIT.refused,
    );
  const existing = entriesIn(dir);
  if (existing && existing.length > 0)
    throw new CommandError(
      `${dir} is not empty: a backup goes into a new or empty folder (one folder per backup).`,
      EXIT.refused,
    );
  if (!fs.existsSync(path.join(dataDir, SQLITE_FILE)))
    throw new CommandError(
      `There is no database in ${dataDir} (${SQLITE_FILE}): is DATA_DIR the server's?`,
      EXIT.failed,
    );
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  try {
    const taken = await takeBackup(options);
    options.out(summary(options, taken, Date.now() - started));
  } catch (err) {
    // Nothing half-made is left to be taken for a backup; the folder was new or empty.
    for (const name of entriesIn(dir) ?? [])
      fs.rmSync(path.join(dir, name), { recursive: true, force: true });
    if (err instanceof NoDatabaseError) throw new CommandError(err.message, EXIT.failed);
    throw err;
  }
}

type Taken = Awaited<ReturnType<typeof takeBackup>>;

async function takeBackup(options: BackupOptions) {
  const { dir, dataDir } = options;
  // The books are immutable, named by their hash, but one may be deleted at any time: those there
  // now are copied first, the database then, and what it names that came meanwhile after it.
  const early = await copyBooks(dataDir, dir, listBooks(dataDir), 'skip-missing');
  const { at } = await backUpSqlite(dataDir, path.join(dir, SQLITE_FILE));
  const facts = describeSqliteCopy(path.join(dir, SQLITE_FILE));
  const named = new Set(facts.books.map((b) => b.sha256));
  const late = await copyBooks(
    dataDir,
    dir,
    [...named].filter((sha) => !early.copied.has(sha)),
    'fail-missing',
  );
  const copied = new Map([...early.copied, ...late.copied]);
  const damaged = [...early.damaged, ...late.damaged].filter((sha) => named.has(sha));
  if (damaged.length > 0)
    throw new CommandError(
      `These books in DATA_DIR no longer hold the bytes they were stored with (their SHA-256 differs):\n${damaged
        .map((sha) => `  ${bookPath(dataDir, sha)}`)
        .join('\n')}\nRestore them from an earlier backup, or upload them again.`,
      EXIT.failed,
    );
  // Deleted before the database's moment: not part of this backup.
  for (const sha of copied.keys()) if (!named.has(sha)) fs.rmSync(path.join(dir, bookEntry(sha)));
  const files: ManifestFile[] = [{ path: SQLITE_FILE, ...(await hashFile(path.join(dir, SQLITE_FILE))) }];
  for (const book of facts.books) {
    const file = copied.get(book.sha256);
    if (file?.size !== book.size)
      throw new CommandError(
        `${bookPath(dataDir, book.sha256)} holds ${file?.size} bytes; the database says ${book.size}.`,
        EXIT.failed,
      );
    files.push({ path: bookEntry(book.sha256), ...file });
  }
  // With CODE_ENCRYPTION_KEY set, a key file in DATA_DIR is not the key the server seals with.
  const key = options.withKey && !options.keyInConfig ? await copyKey(dataDir, dir) : undefined;
  if (key) files.push(key);
  await syncFolders(dir);
  await writeManifest(
    dir,
    newManifest({
      createdAt: new Date(at).toISOString(),
      serverVersion: serverVersion(),
      migration: facts.migration,
      store: 'sqlite',
      withKey: key !== undefined,
      counts: {
        calls: facts.calls,
        users: facts.users,
        books: facts.books.length,
        sealedTexts: facts.sealedTexts,
        secondFactors: facts.secondFactors,
      },
      files,
    }),
  );
  return { at, facts, files, key: key !== undefined };
}

/** The release: the version in apps/server/package.json, the first above this file (src/cli/ or dist/). */
function serverVersion(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) return String(JSON.parse(fs.readFileSync(file, 'utf8')).version ?? 'unknown');
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

/** The hashes of the book files in DATA_DIR/books now (not the uploads being received, in tmp/). */
function listBooks(dataDir: string): string[] {
  const root = path.join(dataDir, 'books');
  return (entriesIn(root) ?? [])
    .filter((d) => /^[0-9a-f]{2}$/.test(d))
    .flatMap((d) => entriesIn(path.join(root, d)) ?? [])
    .map((name) => /^([0-9a-f]{64})\.pdf$/.exec(name)?.[1])
    .filter((sha): sha is string => sha !== undefined);
}

/**
 * Copies books into the backup, each checked against its name. A book gone meanwhile was
 * deleted: skipped before the database is copied, an error after (the copy names it).
 */
async function copyBooks(
  dataDir: string,
  dir: string,
  hashes: readonly string[],
  missing: 'skip-missing' | 'fail-missing',
) {
  const copied = new Map<string, { size: number; sha256: string }>();
  const damaged: string[] = [];
  for (const sha of hashes) {
    const target = path.join(dir, bookEntry(sha));
    try {
      const file = await copyHashed(bookPath(dataDir, sha), target);
      if (file.sha256 === sha) copied.set(sha, file);
      else damaged.push(sha);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      fs.rmSync(target, { force: true });
      if (missing === 'fail-missing')
        throw new CommandError(
          `${bookPath(dataDir, sha)} is gone, and the database copied names it: deleted while the backup ran (run it again), or lost before (then the console lists the book, but it cannot be downloaded: upload it again).`,
          EXIT.failed,
        );
    }
  }
  return { copied, damaged };
}

async function copyKey(dataDir: string, dir: string): Promise<ManifestFile | undefined> {
  const from = path.join(dataDir, KEY_FILE);
  if (!fs.existsSync(from)) return undefined;
  return { path: KEY_FILE, ...(await copyHashed(from, path.join(dir, KEY_FILE))) };
}

/** The backup's folders made durable before the manifest says it is whole. */
async function syncFolders(dir: string): Promise<void> {
  const books = path.join(dir, 'books');
  for (const d of entriesIn(books) ?? []) await syncFolder(path.join(books, d));
  if (fs.existsSync(books)) await syncFolder(books);
  await syncFolder(dir);
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

function summary(options: BackupOptions, taken: Taken, ms: number): string {
  const { facts, files } = taken;
  const db = files[0] as ManifestFile;
  const bookBytes = files.filter((f) => f.path.startsWith('books/')).reduce((sum, f) => sum + f.size, 0);
  const lines = [
    `Backed up ${options.dataDir} into ${options.dir} in ${(ms / 1000).toFixed(1)} s:`,
    `  the database as of ${new Date(taken.at).toISOString()}: ${mb(db.size)}, ${count(facts.calls, 'call')}, ${count(facts.users, 'staff user')} (migration ${facts.migration})`,
    `  ${count(facts.books.length, 'book')}: ${mb(bookBytes)}, each checked against its SHA-256`,
    `  ${keyLine(options, taken.key)}`,
    `Check it at any time with: pnpm admin verify ${options.dir}`,
  ];
  return `${lines.join('\n')}\n`;
}

function keyLine(options: BackupOptions, included: boolean): string {
  if (included) return `the code key (${KEY_FILE}): keep this backup as safe as the configuration`;
  if (options.keyInConfig)
    return 'not the code key: it is CODE_ENCRYPTION_KEY, in the configuration; keep that safe, apart';
  if (options.withKey) return `no code key: ${options.dataDir} holds no ${KEY_FILE}`;
  return `not the code key (${KEY_FILE}): keep it with the configuration, or add --with-key`;
}
