import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, type PostgresPool } from 'kysely';
import { type AuditRepository, createAuditRepository } from './audit.js';
import {
  type Availability,
  type DatabaseStatus,
  isConnectionError,
  isDiskFullError,
} from './availability.js';
import {
  type BookRepository,
  createBookRepository,
  createSchoolRepository,
  createTemplateRepository,
  type SchoolRepository,
  type TemplateRepository,
} from './catalog.js';
import { type Checkpointer, startCheckpointer } from './checkpointer.js';
import { type DbOptions, type DialectName, isPostgresUrl, openDatabase } from './db.js';
import { createLimitRepository, type LimitRepository } from './limits.js';
import { NulToReplacementPlugin } from './nul-plugin.js';
import { createPartitions, isLockTimeout, type PartitionPeriod, type Partitions } from './partitions.js';
import { watchPostgres } from './pg-watch.js';
import { type OpenedReplica, openReadReplica, type ReadReplica } from './replica.js';
import type { Database } from './schema.js';
import { createSessionRepository, type SessionRepository } from './sessions.js';
import { createUnitOfWork, type UnitOfWork } from './unit-of-work.js';
import { createUserRepository, type UserRepository } from './users.js';
import { createWalSync } from './wal-sync.js';

export type { AuditRow, NewAuditEntry } from './audit.js';
export type { Availability, DatabaseStatus } from './availability.js';
export {
  DatabaseUnavailableError,
  isConnectionError,
  isDiskFullError,
  isUnavailableError,
} from './availability.js';
export type { BookRow, SchoolRow, TemplateRow } from './catalog.js';
export { UNIQUE_CONSTRAINTS, type UniqueConstraint, uniqueViolation } from './conflicts.js';
export type { DbOptions, DialectName, OpenedDatabase } from './db.js';
// The database alone, without the store's watch, checkpoints or instance: for `migrate-data`.
export { isPostgresUrl, openDatabase } from './db.js';
export type { LimitCheck, LimitRepository, LimitTake } from './limits.js';
export { columnTypes } from './migrations.js';
export type { KeptRows, TableOwner, TimePartitioned } from './owners.js';
export {
  createPartitions,
  isLockTimeout,
  isPartitionAttachedMeanwhile,
  PARTITION_PERIODS,
  type Partition,
  type PartitionLayout,
  type PartitionPeriod,
  type Partitions,
  periodEnd,
  periodStart,
  type Retired,
} from './partitions.js';
export { announceCalls } from './pg-watch.js';
export { prepared } from './prepared.js';
export type { ReadReplica, ReplicaState, ReplicaStatus } from './replica.js';
export type {
  Binding,
  CallRow,
  CallSummaryRow,
  CallsTable,
  Database,
  DeliveryStatus,
  NewCall,
  Outcome,
  SessionMethod,
} from './schema.js';
export { CALL_COLUMNS, CALL_SUMMARY_COLUMNS, COPIED_TABLES } from './schema.js';
export type { SessionWithUser } from './sessions.js';
// The embedded database copied while the server writes, for `pnpm admin backup` (cli/backup.ts).
export * from './sqlite-backup.js';
export type { PostgresTx, SqliteTx, UnitOfWork } from './unit-of-work.js';
export { schoolIdsOf, schoolIdsText, type UserRow } from './users.js';

/** What the store tells of the database's changes that it did not make itself. */
export interface StoreEvents {
  /**
   * Calls another instance committed (PostgreSQL, from the watch connection), and whether some of
   * them queued deliveries.
   */
  elsewhere: [ids: readonly number[], queued: boolean];
}

/** The store: the database and the repositories over it. */
export interface Store {
  /** Which database: the embedded SQLite file, or PostgreSQL shared by several instances. */
  readonly dialect: DialectName;
  readonly db: Kysely<Database>;
  /**
   * Reads that may be a little behind (at most DATABASE_READ_MAX_LAG): History's lists, search,
   * counts, exports and call pages (history/calls.ts, which asks `db` for a call page the replica
   * does not have yet), and the Dashboard's statistics (routes/api/service.ts). On the replica
   * while it is `ok` (store/replica.ts), else on the primary; without DATABASE_READ_URL this is
   * `db`. Everything that writes, or must see what was just written, uses `db`: the call
   * recorder, the outbox and every delivery state (the lists' too), sessions, limits, the audit,
   * users, schools, books and templates, the live tail, the roll-ups and retention.
   * Single statements only, never a transaction: a read the replica fails is run again on the
   * primary, and consecutive reads may be served by either.
   */
  readonly reads: Kysely<Database>;
  /**
   * PostgreSQL's time partitions of calls, deliveries and attempts: made ahead, retired whole
   * (store/partitions.ts); undefined on SQLite, whose tables are single.
   */
  readonly partitions: Partitions | undefined;
  /** The read replica (DATABASE_READ_URL) and its state; undefined without one. */
  readonly replica: ReadReplica | undefined;
  /** SQLite's handle, for the statements a module prepares once (the call recorder's, the outbox's). */
  readonly sqlite: SQLite.Database | undefined;
  /**
   * PostgreSQL: the pool under `reads` (the replica's connections while it is `ok`, else the
   * primary's), for what Kysely cannot do: reading a result row by row as it arrives, the rows kept
   * by nothing (history/calls.ts `scanRows`, the exports). A read here is not run again on the
   * primary if the replica fails it: the export ends with the error.
   */
  readonly readPool: PostgresPool | undefined;
  /** Transactions: durable, relaxed, locked, and SQLite's synchronous forms (unit-of-work.ts). */
  readonly work: UnitOfWork;
  /** Changes made by other instances (StoreEvents). */
  readonly events: EventEmitter<StoreEvents>;
  readonly schools: SchoolRepository;
  readonly templates: TemplateRepository;
  readonly books: BookRepository;
  readonly users: UserRepository;
  readonly sessions: SessionRepository;
  readonly audit: AuditRepository;
  /** Limits shared by every instance (PostgreSQL; SQLite keeps its limits in the one process). */
  readonly limits: LimitRepository;
  /**
   * This process's id among the instances sharing the database. On PostgreSQL it announces itself
   * every second (the `instances` table, by the database's clock), so the others can tell when it is
   * gone (docs/outbox.md).
   */
  readonly instance: string;
  /** Forgets instances (PostgreSQL) silent since before `before` (epoch ms, the database's clock). */
  forgetInstances(before: number): Promise<number>;
  /** Cheap round trip, for health checks. */
  ping(): Promise<void>;
  /**
   * Whether the database can be used now (PostgreSQL: reached and migrated, watched every second;
   * SQLite: always, once open). Queries fail at once with DatabaseUnavailableError while it is not.
   */
  readonly availability: Availability;
  /** Whether the database answers and every migration this build knows is applied (for /readyz). */
  readiness(): { database: boolean; migrations: boolean; status: DatabaseStatus };
  /**
   * Runs `job` once the database has been reached and migrated: now, when it has (the usual
   * case, and always on SQLite), else as soon as it is. What fails is given to `onError`.
   */
  whenReady(job: () => Promise<void> | void, onError: (err: unknown) => void): Promise<void>;
  /**
   * Runs `job` unless another instance is running the same one (a PostgreSQL session advisory
   * lock, held while it runs); on SQLite there is no other instance. Answers whether it ran.
   */
  exclusively(name: string, job: () => Promise<void>): Promise<boolean>;
  /**
   * Runs `job` once no other job of the same name runs, on any instance (PostgreSQL: a session
   * advisory lock, waited for; SQLite: in this process). For what must not interleave across
   * several statements and a file or stream, e.g. a book upload and a book deletion sharing bytes.
   */
  serially<T>(name: string, job: () => Promise<T>): Promise<T>;
  /** Closes the database (what writes to it has finished first: the plugins close in reverse). */
  close(): Promise<void>;
}

const NOT_TAKEN = Symbol('not taken');

/**
 * Runs `job` holding a PostgreSQL session advisory lock on `key`, on a pooled connection of its
 * own (the job's queries use others): `wait` waits for the lock, `try` gives up at once and
 * answers NOT_TAKEN when another session holds it.
 */
async function withSessionLock<T>(
  pool: PostgresPool,
  key: string,
  mode: 'wait' | 'try',
  job: () => Promise<T>,
): Promise<T | typeof NOT_TAKEN> {
  const client = await pool.connect();
  try {
    if (mode === 'wait') {
      await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
    } else {
      const got = await client.query<{ ok: boolean }>(
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok',
        [key],
      );
      if (!got.rows[0]?.ok) return NOT_TAKEN;
    }
    try {
      return await job();
    } finally {
      // A session that was lost meanwhile has lost its lock with it; releasing then closes it.
      await client
        .query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key])
        .catch((err: unknown) => {
          if (!isConnectionError(err)) throw err;
        });
    }
  } finally {
    client.release();
  }
}

/** Jobs by name, one at a time, in this process. */
function localQueue() {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(name: string, job: () => Promise<T>): Promise<T> => {
    const previous = tails.get(name) ?? Promise.resolve();
    const run = previous.catch(() => {}).then(job);
    const tail = run.catch(() => {});
    tails.set(name, tail);
    void tail.then(() => {
      if (tails.get(name) === tail) tails.delete(name);
    });
    return run;
  };
}

export interface StoreOptions extends DbOptions {
  /** PostgreSQL: a streaming replica of `databaseUrl` for the reads that may be a little behind (`reads`). */
  readonly readUrl?: string | undefined;
  /** The replica behind by more than this is not read from (ms; default 30 s). */
  readonly readMaxLagMs?: number | undefined;
  /** PostgreSQL: the period of a time partition (store/partitions.ts; default a month). */
  readonly partitionPeriod?: PartitionPeriod | undefined;

  /** Trouble the store works around and someone should know of (a failed WAL checkpoint). */
  readonly onWarning?: (message: string, err?: unknown) => void;
}

export async function openStore(options: StoreOptions): Promise<Store> {
  if (options.readUrl !== undefined && !isPostgresUrl(options.databaseUrl))
    throw new Error('DATABASE_READ_URL needs DATABASE_URL: a read replica is of a PostgreSQL primary.');
  const period = options.partitionPeriod ?? 'month';
  const opened = await openDatabase({
    ...options,
    // The periods from now on made before the first call is taken (on a new database the tables
    // have only their default partitions): no call's row waits in a default partition for the
    // job to move it. Busy tables (another instance's long query) leave it to the job.
    afterMigrate: async (migrated) => {
      await createPartitions(migrated, period, options.owners)
        .ensureAhead(Date.now())
        .catch((err: unknown) => {
          if (!isLockTimeout(err)) throw err;
        });
    },
  });
  const { db, dialect, availability } = opened;
  // PostgreSQL with DATABASE_READ_URL: the reads that may be a little behind, on the replica.
  const replica: OpenedReplica | undefined =
    opened.dialect === 'postgres' && options.readUrl !== undefined
      ? openReadReplica({
          readUrl: options.readUrl,
          primaryUrl: opened.connectionString,
          primary: opened.pool,
          maxLagMs: options.readMaxLagMs ?? 30_000,
          // Smaller than the primary's: History, exports and search, not the write path.
          poolSize: Math.max(2, Math.ceil((options.poolSize ?? 10) / 2)),
          queryTimeoutMs: options.queryTimeoutMs ?? 30_000,
          log: options.log ?? { info() {}, warn() {} },
        })
      : undefined;
  const reads = replica
    ? new Kysely<Database>({
        dialect: new PostgresDialect({ pool: replica.pool }),
        plugins: [new NulToReplacementPlugin()],
      })
    : db;
  /** A write that failed: a full disk is checked again at once (PostgreSQL's pool sees its own). */
  const observe = (err: unknown) => {
    if (isDiskFullError(err)) options.onDiskFull?.();
  };
  // SQLite: WAL checkpoints in a worker thread, the writer paused only for the last few frames.
  const checkpointer: Checkpointer | undefined =
    opened.dialect === 'sqlite'
      ? startCheckpointer({
          sqlite: opened.sqlite,
          synchronous: options.synchronous,
          pauseWrites: (work) => db.connection().execute(() => work()),
          onWarning: (message, err) => {
            observe(err);
            options.onWarning?.(message, err);
          },
        })
      : undefined;
  // SQLite: a statement of its own, so that /healthz does not queue behind a transaction or a
  // pause of the writer for Kysely's connection.
  const sqlitePing =
    opened.dialect === 'sqlite' ? opened.sqlite.prepare('SELECT id FROM calls LIMIT 1') : undefined;
  const instance = randomUUID();
  // SQLITE_SYNCHRONOUS=FULL: durable commits flush the WAL off the event loop (wal-sync.ts).
  const wal =
    opened.dialect === 'sqlite' && opened.synchronous === 'FULL'
      ? createWalSync(`${opened.sqlite.name}-wal`)
      : undefined;
  const work = createUnitOfWork(
    dialect,
    db,
    opened.dialect === 'sqlite' ? { handle: opened.sqlite, synchronous: opened.synchronous, wal } : undefined,
    observe,
  );
  const events = new EventEmitter<StoreEvents>();
  let closing = false;
  /** Every migration this build knows is applied (it stays so: migrations only add). */
  let migrated = false;
  // PostgreSQL: the watch connection (LISTEN for other instances' calls, and the check that says
  // whether the database is up), once the database has been reached.
  let watch: { close(): Promise<void> } | undefined;
  opened.ready.then(
    () => {
      migrated = true;
      if (closing || opened.dialect !== 'postgres') return;
      watch = watchPostgres({
        connectionString: opened.connectionString,
        self: instance,
        availability,
        log: options.log ?? { info() {}, warn() {} },
        onCalls: (ids, queued) => events.emit('elsewhere', ids, queued),
      });
    },
    () => {},
  );
  const inProcess = localQueue();
  return {
    dialect,
    db,
    reads,
    replica: replica?.replica,
    partitions: opened.dialect === 'postgres' ? createPartitions(db, period, options.owners) : undefined,
    instance,
    sqlite: opened.dialect === 'sqlite' ? opened.sqlite : undefined,
    readPool: opened.dialect === 'postgres' ? (replica?.pool ?? opened.pool) : undefined,
    work,
    events,
    async forgetInstances(before) {
      if (opened.dialect !== 'postgres') return 0;
      const result = await db.deleteFrom('instances').where('seen_at', '<', before).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
    schools: createSchoolRepository(db),
    templates: createTemplateRepository(db),
    books: createBookRepository(db),
    users: createUserRepository(db, work),
    sessions: createSessionRepository(db),
    audit: createAuditRepository(db),
    limits: createLimitRepository(db, work),
    async ping() {
      if (sqlitePing) sqlitePing.get();
      else await db.selectFrom('calls').select('id').limit(1).execute();
    },
    availability,
    readiness() {
      const status = availability.status();
      return { database: status.up, migrations: migrated, status };
    },
    async whenReady(job, onError) {
      try {
        await opened.ready;
        if (closing) return;
        await job();
      } catch (err) {
        if (!closing) onError(err);
      }
    },
    async exclusively(name, job) {
      if (closing) return false;
      if (opened.dialect === 'sqlite') {
        await job();
        return true;
      }
      const ran = await withSessionLock(opened.pool, `job:${name}`, 'try', job);
      return ran !== NOT_TAKEN;
    },
    serially(name, job) {
      // In this process first: one pooled connection waits for the lock, not one per request.
      return inProcess(name, async () => {
        if (opened.dialect === 'sqlite') return job();
        return (await withSessionLock(opened.pool, `serial:${name}`, 'wait', job)) as Awaited<
          ReturnType<typeof job>
        >;
      });
    },
    async close() {
      closing = true;
      if (opened.dialect === 'postgres') opened.stopStarting();
      await watch?.close();
      if (opened.dialect === 'postgres' && migrated) {
        // Gone: the others need not wait for its silence (its claims were handed back already).
        await db
          .deleteFrom('instances')
          .where('id', '=', instance)
          .execute()
          .catch(() => {});
      }
      await wal?.close();
      await checkpointer?.close();
      if (replica) {
        await reads.destroy();
        await replica.close();
      }
      await db.destroy();
    },
  };
}

/** The staff accounts alone: what the operator's command line (cli/admin.ts) changes. */
export interface StaffStore {
  readonly dialect: DialectName;
  readonly users: UserRepository;
  readonly sessions: SessionRepository;
  readonly audit: AuditRepository;
  close(): Promise<void>;
}

/**
 * Opens the database for the staff accounts only, beside a server that may be running on it: no
 * checkpointer, no watch connection, no instance announced, no outbox. Rejects when PostgreSQL
 * cannot be reached within `waitMs` (a command should say so, not wait for ever).
 */
export async function openStaffStore(options: DbOptions & { readonly waitMs: number }): Promise<StaffStore> {
  const opened = await openDatabase({ ...options, poolSize: 2 });
  const { db } = opened;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      opened.ready,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the database could not be reached within ${options.waitMs / 1000} s`)),
          options.waitMs,
        );
      }),
    ]);
  } catch (err) {
    if (opened.dialect === 'postgres') opened.stopStarting();
    await db.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  const work = createUnitOfWork(
    opened.dialect,
    db,
    opened.dialect === 'sqlite' ? { handle: opened.sqlite, synchronous: opened.synchronous } : undefined,
  );
  return {
    dialect: opened.dialect,
    users: createUserRepository(db, work),
    sessions: createSessionRepository(db),
    audit: createAuditRepository(db),
    close: () => db.destroy(),
  };
}
