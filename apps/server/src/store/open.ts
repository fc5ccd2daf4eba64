import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Kysely, PostgresDialect } from 'kysely';
import { createAuditRepository } from './audit.js';
import { isDiskFullError } from './availability.js';
import { createBookRepository, createSchoolRepository, createTemplateRepository } from './catalog.js';
import { type Checkpointer, startCheckpointer } from './checkpointer.js';
import { type DbOptions, isPostgresUrl, type OpenedDatabase, openDatabase } from './db.js';
import { createLimitRepository } from './limits.js';
import { jobLocks } from './locks.js';
import { NulToReplacementPlugin } from './nul-plugin.js';
import { createPartitions, isLockTimeout, type PartitionPeriod } from './partitions.js';
import { watchPostgres } from './pg-watch.js';
import { type OpenedReplica, openReadReplica } from './replica.js';
import type { Database } from './schema.js';
import { createSessionRepository } from './sessions.js';
import type { Store, StoreEvents } from './store.js';
import { createUnitOfWork } from './unit-of-work.js';
import { createUserRepository } from './users.js';
import { createWalSync } from './wal-sync.js';

// Opening the store for the server: the database, its read replica, SQLite's checkpoints and WAL
// flushes, PostgreSQL's watch of other instances, and the repositories over it (the `Store`, store.ts).

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
  const { replica, reads } = openReads(opened, options);
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
        onCalls: (ids, queued) => events.emit('callsFromOtherInstances', ids, queued),
      });
    },
    () => {},
  );
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
    ...jobLocks(opened.dialect === 'postgres' ? opened.pool : undefined, () => closing),
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

/**
 * The store's `reads`: with DATABASE_READ_URL (PostgreSQL), a Kysely over the replica's pool, which
 * hands out the primary's connections while the replica lags or is down (replica.ts); else `db`.
 */
function openReads(
  opened: OpenedDatabase,
  options: StoreOptions,
): { replica: OpenedReplica | undefined; reads: Kysely<Database> } {
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
    : opened.db;
  return { replica, reads };
}
