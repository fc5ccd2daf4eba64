import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { migrationProvider } from './migrations.js';
import type { TableOwner } from './owners.js';

/** The embedded database's file in DATA_DIR (db.ts opens it there). */
export const SQLITE_FILE = 'school-messaging.db';

/** DATA_DIR holds no database to back up. */
export class NoDatabaseError extends Error {
  override name = 'NoDatabaseError';
}

/** What a copy of the database holds, as a backup's manifest and a restore tell it. */
export interface SqliteCopyFacts {
  /** The last migration applied to it. */
  readonly migration: string;
  /** Every book's bytes it names, once each: DATA_DIR/books/<sha256>.pdf must hold them. */
  readonly books: readonly { readonly sha256: string; readonly size: number }[];
  readonly calls: number;
  readonly users: number;
  /** SMS whose text (an auth code) is sealed under the code key: unreadable without it. */
  readonly sealedTexts: number;
  /** Staff second factors, sealed under the code key too. */
  readonly secondFactors: number;
}

/**
 * Copies the database in `dataDir` into `target` (a new file, mode 0600) while a server may be
 * writing to it, and answers when the copy's moment was. SQLite's online backup copies pages in
 * steps, and starts again whenever another connection commits between two steps: under a steady
 * load of calls it would never finish. The copy is made from inside one read transaction instead,
 * begun before the first step: WAL mode lets the server commit meanwhile, and the copy is the
 * database as of that moment, every commit before it in, none after. The server's checkpoints keep
 * the log's frames that transaction still reads until it ends (store/checkpointer.ts: PASSIVE).
 * The copy is left in rollback-journal mode, one self-contained file, and checked.
 */
export async function backUpSqlite(dataDir: string, target: string): Promise<{ at: number }> {
  const source = path.join(dataDir, SQLITE_FILE);
  if (!fs.existsSync(source))
    throw new NoDatabaseError(`There is no database in ${dataDir} (${SQLITE_FILE}).`);
  const db = new SQLite(source, { fileMustExist: true });
  let at: number;
  try {
    db.pragma('busy_timeout = 5000');
    db.exec('BEGIN');
    // A deferred transaction reads its snapshot at its first read: this one.
    db.prepare('SELECT count(*) FROM sqlite_schema').get();
    at = Date.now();
    fs.writeFileSync(target, '', { flag: 'wx', mode: 0o600 });
    // 1 000 pages (4 MB) a step, the event loop turning between them.
    await db.backup(target, { progress: () => 1000 });
    db.exec('COMMIT');
  } finally {
    db.close();
  }
  settleCopy(target);
  return { at };
}

/** The copy as one file of its own, checked; its -wal and -shm are gone when this returns. */
function settleCopy(file: string): void {
  const copy = new SQLite(file, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = DELETE');
    const check = copy.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new Error(`The copy of the database does not pass SQLite's check: ${check}`);
  } finally {
    copy.close();
  }
  fs.chmodSync(file, 0o600);
}

/** What a copy made by backUpSqlite holds (opened read-only: nothing is written beside it). */
export function describeSqliteCopy(file: string): SqliteCopyFacts {
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    const count = (sql: string) => Number((db.prepare(sql).get() as { n: number }).n);
    const tracked = db
      .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'kysely_migration'")
      .get();
    const last = tracked
      ? (db.prepare('SELECT max(name) AS name FROM kysely_migration').get() as { name: string | null })
      : undefined;
    const migration = last?.name;
    if (!migration) throw new Error('The copy is not a database of this service (no migrations).');
    return {
      migration,
      books: db
        .prepare('SELECT sha256, max(size) AS size FROM books GROUP BY sha256 ORDER BY sha256')
        .all() as { sha256: string; size: number }[],
      calls: count('SELECT count(*) AS n FROM calls'),
      users: count('SELECT count(*) AS n FROM users'),
      sealedTexts: count('SELECT count(*) AS n FROM deliveries WHERE secret IS NOT NULL'),
      secondFactors: count('SELECT count(*) AS n FROM users WHERE totp_secret IS NOT NULL'),
    };
  } finally {
    db.close();
  }
}

/**
 * The last migration this build knows, the store's or its tables' owners' (a backup taken by a
 * newer release may be past it).
 */
export async function latestSqliteMigration(owners: readonly TableOwner[]): Promise<string> {
  const names = Object.keys(await migrationProvider('sqlite', owners).getMigrations()).sort();
  return names[names.length - 1] ?? '';
}
