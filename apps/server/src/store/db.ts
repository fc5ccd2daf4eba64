import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import { NulToReplacementPlugin } from './dialect.js';
import { type DialectName, migrationProvider } from './migrations.js';
import type { Database } from './schema.js';

export type { DialectName };

export interface DbOptions {
  readonly dataDir: string;
  readonly synchronous: 'FULL' | 'NORMAL';
  /** `postgres://…`: PostgreSQL; unset: SQLite in `dataDir`. */
  readonly databaseUrl?: string | undefined;
  /** PostgreSQL: connections in the pool (besides the one that listens for notifications). */
  readonly poolSize?: number | undefined;
}

/** The database behind the store, of either dialect. */
export type OpenedDatabase =
  | {
      readonly dialect: 'sqlite';
      readonly db: Kysely<Database>;
      /** The SQLite handle itself, for the few hot statements prepared once. */
      readonly sqlite: SQLite.Database;
      /** SQLITE_SYNCHRONOUS: FULL makes each recorded call durable before it is answered. */
      readonly synchronous: 'FULL' | 'NORMAL';
    }
  | {
      readonly dialect: 'postgres';
      readonly db: Kysely<Database>;
      readonly pool: pg.Pool;
      /** Where to connect for a client of one's own (LISTEN). */
      readonly connectionString: string;
    };

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/**
 * pg returns 64-bit integers and numerics as strings (they may not fit a double). Ours are epoch
 * milliseconds, ids, sizes and counts, all far below 2^53, so they are read as numbers, as SQLite
 * gives them: every query reads the same on both.
 */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

export function isPostgresUrl(url: string | undefined): url is string {
  return url !== undefined && /^postgres(ql)?:\/\//i.test(url);
}

/**
 * Opens the database and brings its schema up to date before anything is served: PostgreSQL when
 * `databaseUrl` is a postgres:// URL, otherwise the embedded SQLite file under DATA_DIR (WAL).
 */
export async function openDatabase(options: DbOptions): Promise<OpenedDatabase> {
  const opened = isPostgresUrl(options.databaseUrl)
    ? openPostgres(options.databaseUrl, options.poolSize ?? 10)
    : openSqlite(options);
  try {
    await migrate(opened.db, opened.dialect);
  } catch (err) {
    await opened.db.destroy();
    throw err;
  }
  return opened;
}

function openSqlite(options: DbOptions): OpenedDatabase {
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
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  return { dialect: 'sqlite', db, sqlite, synchronous: options.synchronous };
}

/**
 * Kysely's SQLite driver prepares every query it runs: for the outbox's claims and finishes, many
 * a second, that was 5 % of a busy server's CPU. The same SQL text gets the same prepared
 * statement here (one connection, statements run one at a time; one still iterating is not
 * handed out again).
 */
function withStatementCache(sqlite: SQLite.Database) {
  const statements = new LRUCache<string, SQLite.Statement>({ max: 256 });
  return {
    close: () => sqlite.close(),
    prepare(sql: string): SQLite.Statement {
      const cached = statements.get(sql);
      if (cached && !cached.busy) return cached;
      const statement = sqlite.prepare(sql);
      statements.set(sql, statement);
      return statement;
    },
  };
}

function openPostgres(connectionString: string, max: number): OpenedDatabase {
  const pool = new pg.Pool({
    connectionString,
    max,
    types,
    // A request waits at most this long for a free connection, then fails (and is answered 500
    // or 503) instead of queueing without end.
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    application_name: 'school-messaging',
  });
  // An idle client whose connection drops (a database restart) emits here; without a listener the
  // process would crash. The pool replaces it on the next checkout.
  pool.on('error', () => {});
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    plugins: [new NulToReplacementPlugin()],
  });
  return { dialect: 'postgres', db, pool, connectionString };
}

export async function migrate(db: Kysely<Database>, dialect: DialectName): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider(dialect) });
  if (await migratedByNewerRelease(db, migrator)) return;
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? '');
    throw new Error(`Database migration ${failed?.migrationName ?? ''} failed: ${cause}`.trim());
  }
}

/**
 * Whether a newer release has already migrated this database past what this build knows, with
 * everything this build knows applied: during a rolling upgrade (or a rollback) an older instance
 * may start on it. Migrations only add (docs/deployment.md#upgrades), so it runs on the newer
 * schema; Kysely's migrator would refuse to start.
 */
async function migratedByNewerRelease(db: Kysely<Database>, migrator: Migrator): Promise<boolean> {
  let applied: string[];
  try {
    const rows = await db
      .selectFrom('kysely_migration' as never)
      .select('name' as never)
      .execute();
    applied = rows.map((r) => String((r as { name: string }).name));
  } catch {
    return false; // A fresh database: no migration table yet.
  }
  const known = await migrator.getMigrations();
  const names = new Set(known.map((m) => m.name));
  return applied.some((n) => !names.has(n)) && known.every((m) => m.executedAt !== undefined);
}

/** Whether every migration this build knows has been applied (for /readyz). */
export async function migrationsApplied(db: Kysely<Database>, dialect: DialectName): Promise<boolean> {
  const migrator = new Migrator({ db, provider: migrationProvider(dialect) });
  const all = await migrator.getMigrations();
  return all.every((m) => m.executedAt !== undefined);
}
