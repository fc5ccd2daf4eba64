/**
 * `pnpm admin restore DIR` and `pnpm admin verify DIR`: a backup made by `pnpm admin backup`
 * checked file by file against its manifest, and put back into an empty DATA_DIR
 * (docs/deployment.md#backups-and-restore).
 */
import fs from 'node:fs';
import path from 'node:path';
import { OUTBOX_TABLES } from '../outbox/index.js';
import { KEY_FILE } from '../secrets/sealer.js';
import { describeSqliteCopy, latestSqliteMigration, SQLITE_FILE } from '../store/index.js';
import {
  checkFiles,
  copyHashed,
  count,
  DamagedBackupError,
  describeProblems,
  entriesIn,
  type Manifest,
  mismatch,
  readManifest,
  syncFolder,
} from './backup-manifest.js';
import { CommandError, EXIT } from './command-error.js';

export interface RestoreOptions {
  /** The backup's folder. */
  readonly dir: string;
  readonly dataDir: string;
  /** CODE_ENCRYPTION_KEY is set: the server seals with it, not with a key file. */
  readonly keyInConfig: boolean;
  readonly out: (text: string) => void;
}

/** The backup's manifest, or the reason it is none, as the command's error. */
function manifestOf(dir: string): Manifest {
  if (!fs.existsSync(dir)) throw new CommandError(`There is no folder ${dir}.`, EXIT.failed);
  try {
    const manifest = readManifest(dir);
    if (!manifest.files.some((f) => f.path === SQLITE_FILE))
      throw new DamagedBackupError(`The manifest in ${dir} names no database (${SQLITE_FILE}).`);
    return manifest;
  } catch (err) {
    if (err instanceof DamagedBackupError) throw new CommandError(err.message, EXIT.damaged);
    throw err;
  }
}

export async function verify(options: Pick<RestoreOptions, 'dir' | 'out'>): Promise<void> {
  const manifest = manifestOf(options.dir);
  const problems = await checkFiles(options.dir, manifest);
  if (problems.length > 0) throw new CommandError(describeProblems(options.dir, problems), EXIT.damaged);
  const bytes = manifest.files.reduce((sum, f) => sum + f.size, 0);
  options.out(
    `The backup in ${options.dir} is whole: ${count(manifest.files.length, 'file')}, ${(bytes / 1e6).toFixed(1)} MB, ` +
      `each as its manifest says (size and SHA-256). ${taken(manifest)}\n`,
  );
}

export async function restore(options: RestoreOptions): Promise<void> {
  const { dir, dataDir } = options;
  const held = entriesIn(dataDir);
  if (held && held.length > 0) {
    const names = held.slice(0, 5).join(', ') + (held.length > 5 ? ', …' : '');
    throw new CommandError(
      `${dataDir} already holds data (${names}): a backup is restored only into an empty DATA_DIR, ` +
        'never over one. Stop the server, move that folder aside (or set DATA_DIR to a new one), and run restore again.',
      EXIT.refused,
    );
  }
  const manifest = manifestOf(dir);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dataDir, 0o700);
  try {
    await putBack(dir, dataDir, manifest);
  } catch (err) {
    // Nothing half-restored is left for a server to start on.
    for (const name of entriesIn(dataDir) ?? [])
      fs.rmSync(path.join(dataDir, name), { recursive: true, force: true });
    if (held === undefined) fs.rmdirSync(dataDir);
    throw err;
  }
  options.out(await restored(options, manifest));
}

/**
 * Copies every file into a folder of its own in DATA_DIR, checking each against the manifest as it
 * is read, then moves them in, the database last: a backup that does not match is refused whole,
 * with nothing left in DATA_DIR.
 */
async function putBack(dir: string, dataDir: string, manifest: Manifest): Promise<void> {
  const staging = fs.mkdtempSync(path.join(dataDir, '.restoring-'));
  const problems: string[] = [];
  for (const entry of manifest.files) {
    try {
      const problem = mismatch(
        entry,
        await copyHashed(path.join(dir, entry.path), path.join(staging, entry.path)),
      );
      if (problem) problems.push(problem);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      problems.push(`${entry.path}: missing`);
    }
  }
  if (problems.length > 0)
    throw new CommandError(`${describeProblems(dir, problems)}\nNothing was restored.`, EXIT.damaged);
  for (const name of ['books', KEY_FILE, SQLITE_FILE]) {
    if (fs.existsSync(path.join(staging, name)))
      fs.renameSync(path.join(staging, name), path.join(dataDir, name));
  }
  fs.rmdirSync(staging);
  await syncFolder(dataDir);
}

const taken = (m: Manifest) =>
  `Taken as of ${m.createdAt} by release ${m.serverVersion} (migration ${m.migration}); ` +
  `${count(m.counts.calls, 'call')}, ${count(m.counts.users, 'staff user')}, ${count(m.counts.books, 'book')}` +
  `${m.withKey ? ', the code key' : ', without the code key'}.`;

async function restored(options: RestoreOptions, manifest: Manifest): Promise<string> {
  const facts = describeSqliteCopy(path.join(options.dataDir, SQLITE_FILE));
  const lines = [`Restored ${options.dir} into ${options.dataDir}. ${taken(manifest)}`];
  const known = await latestSqliteMigration([OUTBOX_TABLES]);
  if (facts.migration > known)
    lines.push(
      `This release knows migrations up to ${known}; the backup was taken at ${facts.migration}: run the release that took it (${manifest.serverVersion}) or a newer one.`,
    );
  lines.push(...keyAdvice(options, manifest, facts));
  lines.push('Start the server on it; then log in and look at History and the books.');
  return `${lines.join('\n')}\n`;
}

/** What the restored data needs of the code key, which a backup holds only when asked. */
function keyAdvice(
  options: RestoreOptions,
  manifest: Manifest,
  facts: { sealedTexts: number; secondFactors: number },
): string[] {
  const sealed = [
    facts.sealedTexts > 0 ? `${facts.sealedTexts} SMS waiting to be sent or retried (auth codes)` : '',
    facts.secondFactors > 0 ? count(facts.secondFactors, 'staff second factor') : '',
  ].filter(Boolean);
  if (manifest.withKey)
    return options.keyInConfig
      ? [
          `The code key was restored as ${KEY_FILE}, but CODE_ENCRYPTION_KEY is set and the server uses that: it must be the key of the backed-up server.`,
        ]
      : [`The code key was restored (${KEY_FILE}).`];
  if (options.keyInConfig)
    return [
      'The code key is not in the backup; CODE_ENCRYPTION_KEY is set: it must be the key the backed-up server used.',
    ];
  if (sealed.length === 0)
    return [
      'The code key is not in the backup, and nothing in it is sealed with it: the server makes a new one at its first start.',
    ];
  const lost = [
    facts.sealedTexts > 0 ? 'those SMS fail ("sealed with another key")' : '',
    facts.secondFactors > 0
      ? 'those staff need their second factor reset (pnpm admin users reset-2fa NAME)'
      : '',
  ].filter(Boolean);
  return [
    `The code key is not in the backup, and it seals ${sealed.join(' and ')}. Before starting the server, ` +
      `put the key back: CODE_ENCRYPTION_KEY in the configuration as it was, or the file ${KEY_FILE} ` +
      `(mode 0600) in ${options.dataDir}. Without it the server makes a new key at start: ${lost.join(', and ')}.`,
  ];
}
