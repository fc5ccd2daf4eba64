import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { migrationProvider } from './migrations.js';
import type { Database } from './schema.js';

export interface DbOptions {
  readonly dataDir: string;
  readonly synchronous: 'FULL' | 'NORMAL';
}

/**
 * Opens the embedded SQLite database under DATA_DIR in WAL mode and brings its schema up to
 * date. Migrations run before anything is served.
 */
export interface OpenedDatabase {
  readonly db: Kysely<Database>;
  /** The SQLite handle itself, for the few hot statements prepared once. */
  readonly sqlite: SQLite.Database;
}

export async function openDatabase(options: DbOptions): Promise<OpenedDatabase> {
  fs.mkdirSync(options.dataDir, { recursive: true });
  const sqlite = new SQLite(path.join(options.dataDir, 'school-messaging.db'));
  sqlite.pragma('journal_mode = WAL');
  // FULL: a committed call survives power loss, not just a crash of the process
  // (docs/operations.md#call-records).
  sqlite.pragma(`synchronous = ${options.synchronous}`);
  sqlite.pragma('busy_timeout = 5000');
  // 8 MB of page cache (better-sqlite3 builds with 16 MB): the hot pages are the newest calls and
  // the indexes' tops; a full export streams through the table without needing more.
  sqlite.pragma('cache_size = -8000');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  try {
    await migrate(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return { db, sqlite };
}

export async function migrate(db: Kysely<Database>): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? '');
    throw new Error(`Database migration ${failed?.migrationName ?? ''} failed: ${cause}`.trim());
  }
}
