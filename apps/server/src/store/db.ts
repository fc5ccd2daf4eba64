import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import {
  Kysely,
  Migrator,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  SqliteDialect,
} from 'kysely';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import {
  type Availability,
  alwaysAvailable,
  configurationProblem,
  DatabaseUnavailableError,
  describeError,
  isConnectionError,
  isDiskFullError,
  trackAvailability,
} from './availability.js';
import { type DialectName, migrationProvider } from './migrations.js';
import { NulToReplacementPlugin } from './nul-plugin.js';
import type { TableOwner } from './owners.js';
import { asPrepared } from './prepared.js';
import type { Database } from './schema.js';
import { underStartLock } from './start-lock.js';

export type { DialectName };

/** What the store says in the log while it starts (pino's shape). */
export interface DbLog {
  info(obj: object, message: string): void;
  warn(obj: object, message: string): void;
}

const SILENT: DbLog = { info() {}, warn() {} };

export interface DbOptions {
  readonly dataDir: string;
  readonly synchronous: 'FULL' | 'NORMAL';
  /**
   * The folders above the store that own tables (the outbox: outbox/migrations.ts): their
   * migrations run with the store's, in one sequence (migrations.ts), and on PostgreSQL their
   * tables are partitioned by time with the calls (partitions.ts).
   */
  readonly owners: readonly TableOwner[];
  /** `postgres://…`: PostgreSQL; unset: SQLite in `dataDir`. */
  readonly databaseUrl?: string | undefined;
  /** PostgreSQL: connections in the pool (besides the one that watches the database). */
  readonly poolSize?: number | undefined;
  /** PostgreSQL: a query that takes longer than this fails, and its connection is closed (ms). */
  readonly queryTimeoutMs?: number | undefined;
  readonly log?: DbLog | undefined;
  /** SQLite: a statement found the disk full (SQLITE_FULL); the disk is checked again at once. */
  readonly onDiskFull?: (() => void) | undefined;
  /**
   * PostgreSQL: run on the migrations' connection once migrated, still under the start lock
   * (start-lock.ts), before the database is said to be up (the store makes the current period's
   * partitions, store/partitions.ts).
   */
  readonly afterMigrate?: ((db: Kysely<Database>) => Promise<void>) | undefined;
}

/** The database behind the store, of either dialect. */
export type OpenedDatabase = {
  readonly db: Kysely<Database>;
  /** Whether the database can be used now (availability.ts). */
  readonly availability: Availability;
  /**
   * Resolves once the database has been reached and migrated: at once on SQLite and when
   * PostgreSQL answered at start; later when it did not (it is retried meanwhile). Rejects on a
   * problem no retry mends (credentials refused, a migration that fails).
   */
  readonly ready: Promise<void>;
} & (
  | {
      readonly dialect: 'sqlite';
      /** The SQLite handle itself, for the few hot statements prepared once. */
      readonly sqlite: SQLite.Database;
      /** SQLITE_SYNCHRONOUS: FULL makes each recorded call durable before it is answered. */
      readonly synchronous: 'FULL' | 'NORMAL';
    }
  | {
      readonly dialect: 'postgres';
      /** The pool, as every query reaches it: refused at once while the database is down. */
      readonly pool: PostgresPool;
      /** Where to connect for a client of one's own (the watch connection). */
      readonly connectionString: string;
      /** Stops the start-up retries (close before the database was reached). */
      stopStarting(): void;
    }
);

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
 * Opens the database and brings its schema up to date: PostgreSQL when `databaseUrl` is a
 * postgres:// URL, otherwise the embedded SQLite file under DATA_DIR (WAL). SQLite is migrated
 * before this resolves. PostgreSQL is tried once; if it cannot be reached, this resolves anyway
 * and keeps trying in the background (`ready`), so the server starts, listens and answers 503
 * meanwhile (docs/monitoring.md#faults). Credentials refused or a failed migration throw.
 */
export async function openDatabase(options: DbOptions): Promise<OpenedDatabase> {
  if (isPostgresUrl(options.databaseUrl)) return openPostgres(options.databaseUrl, options);
  const opened = openSqlite(options);
  try {
    await migrate(opened.db, 'sqlite', options.owners);
  } catch (err) {
    await opened.db.destroy();
    throw err;
  }
  return opened;
}

/** The size the write-ahead log is cut back to when it restarts (4 000 pages of 4 kB). */
const WAL_LIMIT_BYTES = 16 * 1024 * 1024;

function openSqlite(options: DbOptions): OpenedDatabase & { dialect: 'sqlite' } {
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
  // What is deleted or overwritten is overwritten with zeros, in the database file and in the
  // pages the WAL holds, so a settled delivery's sealed code leaves no copy behind
  // (docs/security.md#what-is-masked-and-where).
  sqlite.pragma('secure_delete = ON');
  // When the log restarts it is cut back to 16 MB, what the checkpointer lets it reach under load
  // before it restarts it (checkpointer.ts): a burst does not leave a larger file on the disk.
  sqlite.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(sqlite, options.onDiskFull ?? (() => {})) }),
  });
  return {
    dialect: 'sqlite',
    db,
    sqlite,
    synchronous: options.synchronous,
    availability: alwaysAvailable(),
    ready: Promise.resolve(),
  };
}

/**
 * Kysely's SQLite driver prepares every query it runs: for the outbox's claims and finishes, many
 * a second, that was a measurable part of a busy server's CPU (docs/performance.md#what-was-tried).
 * The same SQL text gets the same prepared statement here (one connection, statements run one at
 * a time; one still iterating is not handed out again). A statement that finds the disk full says
 * so (`onDiskFull`) and fails as SQLite made it fail: its transaction is rolled back whole.
 */
function withStatementCache(sqlite: SQLite.Database, onDiskFull: () => void) {
  type Cached = { readonly statement: SQLite.Statement; readonly guarded: SQLite.Statement };
  const statements = new LRUCache<string, Cached>({ max: 256 });
  const guard = <T>(work: () => T): T => {
    try {
      return work();
    } catch (err) {
      if (isDiskFullError(err)) onDiskFull();
      throw err;
    }
  };
  const guarded = (statement: SQLite.Statement) =>
    ({
      reader: statement.reader,
      all: (...params: unknown[]) => guard(() => statement.all(...params)),
      run: (...params: unknown[]) => guard(() => statement.run(...params)),
      iterate: (...params: unknown[]) => guard(() => statement.iterate(...params)),
    }) as unknown as SQLite.Statement;
  return {
    close: () => sqlite.close(),
    prepare(sql: string): SQLite.Statement {
      const cached = statements.get(sql);
      if (cached && !cached.statement.busy) return cached.guarded;
      const statement = sqlite.prepare(sql);
      const entry = { statement, guarded: guarded(statement) };
      statements.set(sql, entry);
      return entry.guarded;
    },
  };
}

/** Start-up retries: the first after this long, doubling up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;
/** While the database is not reached at start, the log says so at most this often. */
const START_LOG_EVERY_MS = 10_000;
/**
 * How long a start waits for its first migrations before the server goes on starting (Fastify
 * gives a plugin 10 s) and they finish in the background.
 */
const START_WAIT_MS = 5_000;
/** /readyz's reasons while a start's one-time work is under way (docs/monitoring.md#faults). */
const MIGRATING = 'the database is being migrated';
const WAITING_FOR_ANOTHER = "waiting for another instance's migrations";

async function openPostgres(
  connectionString: string,
  options: DbOptions,
): Promise<OpenedDatabase & { dialect: 'postgres' }> {
  const log = options.log ?? SILENT;
  const availability = trackAvailability('not connected yet');
  const raw = newPool(connectionString, availability, {
    max: options.poolSize ?? 10,
    // A query the server does not answer (a network that hangs) fails rather than hold its
    // request and its connection forever; that connection is then closed (gated, below).
    query_timeout: options.queryTimeoutMs ?? 30_000,
    application_name: 'school-messaging',
  });
  const pool = gated(raw, availability, true);
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    plugins: [new NulToReplacementPlugin()],
  });
  // Migrations run before the database is known up, so not through the gate, and on a connection
  // of their own without a query timeout: building an index on a large table may take minutes.
  const migrations = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: gated(
        newPool(connectionString, availability, { max: 1, application_name: 'school-messaging-migrate' }),
        availability,
        false,
      ),
    }),
  });

  let stopped = false;
  let wake: (() => void) | undefined;
  const attempt = async (): Promise<'done' | 'unreachable'> => {
    try {
      // One start at a time does the one-time work; the others wait, then find it done.
      await underStartLock(
        migrations,
        {
          onWait: () => availability.markDown(WAITING_FOR_ANOTHER),
          onHeld: () => availability.markDown(MIGRATING),
          stopped: () => stopped,
        },
        async (held) => {
          await migrate(held, 'postgres', options.owners);
          await options.afterMigrate?.(held);
        },
      );
      return 'done';
    } catch (err) {
      const cause = err instanceof MigrationError ? err.cause : err;
      const problem = configurationProblem(cause);
      if (problem) throw new Error(problem);
      if (!isConnectionError(cause)) throw err;
      availability.markDown(describeError(cause));
      return 'unreachable';
    }
  };
  // A first attempt still running after START_WAIT_MS (migrations over many rows: an upgrade of
  // a large history) goes on in the background, the server listening and refusing calls meanwhile
  // (SOAP: a 500 fault; HTTP GET/POST: 503), as while the database cannot be reached.
  const firstAttempt = attempt();
  let timer: NodeJS.Timeout | undefined;
  const first = await Promise.race([
    firstAttempt,
    new Promise<'slow'>((resolve) => {
      timer = setTimeout(() => resolve('slow'), START_WAIT_MS);
    }),
  ])
    .catch(async (err: unknown) => {
      await migrations.destroy();
      await db.destroy();
      throw err;
    })
    .finally(() => clearTimeout(timer));

  /** Attempts until the database is reached and migrated, the pause doubling up to 10 s. */
  const keepTrying = async () => {
    let delay = RETRY_FIRST_MS;
    let lastLog = 0;
    const since = Date.now();
    for (let tries = 1; ; tries++) {
      const now = Date.now();
      if (now - lastLog >= START_LOG_EVERY_MS) {
        log.warn(
          { tries, waitedMs: now - since, retryInMs: delay },
          'the database cannot be reached yet: calls are refused (SOAP: a 500 fault; HTTP GET/POST: 503; with Retry-After), connecting is retried',
        );
        lastLog = now;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (stopped) throw new Error('The store was closed before the database could be reached.');
      if ((await attempt()) === 'done') break;
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
    log.info({ waitedMs: Date.now() - since }, 'the database was reached and is up to date');
  };

  let ready: Promise<void>;
  if (first === 'done') {
    await migrations.destroy();
    availability.markUp();
    ready = Promise.resolve();
  } else {
    if (first === 'slow') {
      log.warn(
        { waitedMs: START_WAIT_MS },
        availability.status().reason === WAITING_FOR_ANOTHER
          ? 'another instance is migrating the database: calls are refused (SOAP: a 500 fault; HTTP GET/POST: 503; with Retry-After) until it is done'
          : 'migrating the database takes a while: calls are refused (SOAP: a 500 fault; HTTP GET/POST: 503; with Retry-After) until it is done',
      );
    }
    ready = (async () => {
      const since = Date.now();
      if (first === 'unreachable' || (await firstAttempt) === 'unreachable') await keepTrying();
      else log.info({ waitedMs: Date.now() - since }, 'the database is migrated');
      availability.markUp();
    })().finally(() => migrations.destroy());
    // Whoever waits for it handles a failure; an unawaited rejection must not end the process.
    ready.catch(() => {});
  }
  return {
    dialect: 'postgres',
    db,
    pool,
    connectionString,
    availability,
    ready,
    stopStarting() {
      stopped = true;
      wake?.();
    },
  };
}

/**
 * A pool of PostgreSQL connections. Every client handles `error` for its whole life: the pool
 * listens only while a client is idle, and a connection lost while checked out (a transaction
 * between statements, an advisory-lock session) would otherwise emit it with no listener and end
 * the process. What is lost is shown to `availability`.
 */
export function newPool(
  connectionString: string,
  availability: Availability,
  options: { max: number; application_name: string; query_timeout?: number; options?: string },
): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    types,
    // A request waits at most this long for a free connection, then fails (and is answered 503)
    // instead of queueing without end.
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    ...options,
  });
  pool.on('connect', (client) => {
    client.on('error', (err) => availability.observe(err));
  });
  pool.on('error', (err) => availability.observe(err));
  return pool;
}

/**
 * The pool as Kysely (and the store's own sessions) reach it. With `gate`, a connection is refused
 * at once while the database is known to be down (no request waits for a connect that will fail),
 * and when it goes down (store/pg-watch.ts: no answer, or no connection) the connections checked
 * out are cut and the requests waiting for one refused: whatever waited on a frozen server gets
 * its temporary fault (503) now, not when a timeout or the server's return ends it; a transaction
 * cut before its COMMIT reached the server is rolled back by it. Every failure is shown to
 * `availability` (a lost connection asks for a check now), and a client whose connection failed
 * or whose query timed out is closed when released, never reused.
 */
export function gated(raw: pg.Pool, availability: Availability, gate: boolean): PostgresPool {
  // One wrapper per client: Kysely keeps a connection object per client it is given.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  /** Clients checked out now, and the connects under way: what a `down` cuts. */
  const out = new Set<pg.PoolClient>();
  const waiting = new Set<(err: Error) => void>();
  if (gate) {
    availability.events.on('down', (reason) => {
      for (const client of out) cut(client);
      for (const refuse of waiting) refuse(new DatabaseUnavailableError(reason));
    });
  }
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client);
    if (wrapper) return wrapper;
    let broken: Error | undefined;
    const fail = (err: unknown) => {
      availability.observe(err);
      if (isConnectionError(err)) broken ??= err as Error;
    };
    wrapper = {
      query(...args: unknown[]) {
        const result = (client.query as (...a: unknown[]) => unknown)(...asPrepared(args));
        if (result && typeof (result as Promise<unknown>).then === 'function') {
          return (result as Promise<unknown>).catch((err: unknown) => {
            fail(err);
            throw err;
          });
        }
        return result;
      },
      release() {
        out.delete(client);
        const err = broken ?? (cutClients.has(client) ? new Error('cut: the database went down') : undefined);
        broken = undefined;
        if (err) wrappers.delete(client);
        client.release(err);
      },
    } as PostgresPoolClient;
    wrappers.set(client, wrapper);
    return wrapper;
  };
  return {
    async connect() {
      if (!gate) return wrap(await raw.connect());
      availability.check();
      let refuse: ((err: Error) => void) | undefined;
      const refused = new Promise<never>((_, reject) => {
        refuse = reject;
      });
      const refuser = refuse as (err: Error) => void;
      waiting.add(refuser);
      const connecting = raw.connect();
      try {
        const client = await Promise.race([connecting, refused]);
        out.add(client);
        return wrap(client);
      } catch (err) {
        // Refused while it waited: the connection, if it comes, goes back to the pool unused.
        connecting.then(
          (client) => client.release(),
          () => {},
        );
        availability.observe(err);
        throw err;
      } finally {
        waiting.delete(refuser);
      }
    },
    end: () => raw.end(),
  };
}

/** Clients cut by a `down`: released as broken, never reused. */
const cutClients = new WeakSet<pg.PoolClient>();

/**
 * Ends a client's connection now, whatever it is waiting for: its query fails at once with
 * "Connection terminated" (a connection error: 503 for a call).
 */
function cut(client: pg.PoolClient): void {
  cutClients.add(client);
  const stream = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
  stream?.destroy();
}

/** A migration, or reading which are applied, failed; `cause` is the database's error. */
export class MigrationError extends Error {
  override name = 'MigrationError';
}

export async function migrate(
  db: Kysely<Database>,
  dialect: DialectName,
  owners: readonly TableOwner[],
): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider(dialect, owners) });
  if (await migratedByNewerRelease(db, migrator)) return;
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? 'unknown error');
    // Which migration failed, or that none could run (the database, or its migration table,
    // could not be read).
    const message = failed
      ? `Database migration ${failed.migrationName} failed: ${cause}`
      : `Database migrations could not be run: ${cause}`;
    throw new MigrationError(message, { cause: error });
  }
}

/**
 * Whether a newer release has already migrated this database past what this build knows, with
 * everything this build knows applied: during a rolling upgrade (or a rollback) an older instance
 * may start on it. Migrations only add (docs/deployment.md#upgrades-and-migrations), so it runs on the newer
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
  } catch (err) {
    if (isConnectionError(err))
      throw new MigrationError(`Database migrations could not be run: ${String(err)}`, { cause: err });
    return false; // A fresh database: no migration table yet.
  }
  const known = await migrator.getMigrations();
  const names = new Set(known.map((m) => m.name));
  return applied.some((n) => !names.has(n)) && known.every((m) => m.executedAt !== undefined);
}
