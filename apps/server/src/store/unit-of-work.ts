import type SQLite from 'better-sqlite3';
import { type CompiledQuery, type Kysely, type QueryResult, sql, type Transaction } from 'kysely';
import type { DialectName } from './migrations.js';
import type { Database } from './schema.js';
import type { WalSync } from './wal-sync.js';

/**
 * Inside a synchronous SQLite transaction on the one connection (`durableSync`, `relaxedSync`):
 * statements prepared once on `handle` run in it. One object for the store's life: nothing is
 * made per call.
 */
export interface SqliteTx {
  readonly dialect: 'sqlite';
  readonly handle: SQLite.Database;
}

/** Inside a PostgreSQL transaction (`durable`): queries on `trx` run in it. */
export interface PostgresTx {
  readonly dialect: 'postgres';
  readonly trx: Transaction<Database>;
}

/**
 * Transactions, the one place where the two databases differ in how work is committed. The
 * modules that own tables (the call recorder, the outbox, staff, limits) compose their statements
 * in these; the store knows nothing of what they write.
 *
 * - SQLite has one connection and one writer: Kysely's SQLite driver serialises every query and
 *   transaction on it with a mutex, and the synchronous forms take the same mutex, so their
 *   prepared statements never run inside someone else's transaction.
 * - PostgreSQL has a pool and concurrent writers, possibly in several processes: what must not
 *   interleave takes an advisory lock (`locked`), and claims skip rows another instance holds
 *   (`FOR UPDATE SKIP LOCKED`, outbox/sql.ts).
 */
export interface UnitOfWork {
  readonly dialect: DialectName;
  /**
   * Work that must be on disk before it is answered (a call's record and its deliveries), as
   * synchronous better-sqlite3 statements: one transaction under Kysely's connection. With
   * SQLITE_SYNCHRONOUS=FULL it commits as NORMAL and resolves once the WAL file is flushed off the
   * event loop (wal-sync.ts), so the disk wait does not hold other requests. SQLite only.
   */
  durableSync<T>(work: (tx: SqliteTx) => T): Promise<T>;
  /** PostgreSQL: a transaction; committed means durable. */
  durable<T>(work: (tx: PostgresTx) => Promise<T>): Promise<T>;
  /**
   * PostgreSQL: one statement, its own transaction (no BEGIN or COMMIT, each a round trip more):
   * answered means committed, and durable with `synchronous_commit` on, as a `durable` transaction
   * is. For the call recorder's group commit, one statement of every owner's part
   * (statement-parts.ts).
   */
  durableStatement<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
  /**
   * Bookkeeping a crash may lose and that is redone when it is (the outbox's claims, finished
   * attempts, recovery, expiry). On SQLite with `synchronous = FULL` it commits without waiting for
   * the disk (as NORMAL): the next durable commit makes it durable with everything before it. It
   * holds the connection, so nothing else commits while it runs. PostgreSQL: a plain transaction.
   */
  relaxed<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
  /** As `relaxed`, for synchronous better-sqlite3 statements in one transaction. SQLite only. */
  relaxedSync<T>(work: (tx: SqliteTx) => T): Promise<T>;
  /**
   * A transaction that holds, until it ends, a lock on each of `keys` (PostgreSQL:
   * transaction-level advisory locks, taken in sorted order so two such transactions cannot
   * deadlock). SQLite: a plain transaction — its single writer already serialises them.
   */
  locked<T>(keys: readonly string[], work: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
}

export function createUnitOfWork(
  dialect: DialectName,
  db: Kysely<Database>,
  sqlite?: {
    readonly handle: SQLite.Database;
    readonly synchronous: 'FULL' | 'NORMAL';
    /** FULL only: the WAL flushed off the event loop. */
    readonly wal?: WalSync | undefined;
  },
  /** What a failed write says of the database (a full disk): told before it is thrown on. */
  observe: (err: unknown) => void = () => {},
): UnitOfWork {
  const handle = sqlite?.handle;
  const tx: SqliteTx | undefined = handle ? { dialect: 'sqlite', handle } : undefined;
  // With FULL, a commit here waits for nothing (NORMAL); what needs the disk waits for it after.
  const full = sqlite?.synchronous === 'FULL' ? handle : undefined;
  const relax = full?.prepare('PRAGMA synchronous = NORMAL');
  const restore = full?.prepare('PRAGMA synchronous = FULL');
  /** `work` in one transaction (made once: better-sqlite3 builds a wrapper per `transaction()`). */
  const inTransaction = handle?.transaction(<T>(work: (tx: SqliteTx) => T): T => work(tx as SqliteTx));
  /** `work` in a relaxed transaction while holding Kysely's connection. */
  const onConnection = <T>(work: (tx: SqliteTx) => T): Promise<T> => {
    if (!inTransaction) return Promise.reject(new Error(`synchronous work is for SQLite, not ${dialect}`));
    return db.connection().execute(async () => {
      relax?.run();
      try {
        return inTransaction(work) as T;
      } catch (err) {
        observe(err);
        throw err;
      } finally {
        restore?.run();
      }
    });
  };
  return {
    dialect,
    async durableSync(work) {
      const result = await onConnection(work);
      try {
        await sqlite?.wal?.durable();
      } catch (err) {
        observe(err);
        throw err;
      }
      return result;
    },
    async durable(work) {
      try {
        return await db.transaction().execute((trx) => work({ dialect: 'postgres', trx }));
      } catch (err) {
        observe(err);
        throw err;
      }
    },
    async durableStatement<R>(query: CompiledQuery<R>) {
      if (dialect !== 'postgres') throw new Error(`durableStatement is for PostgreSQL, not ${dialect}`);
      try {
        return await db.executeQuery(query);
      } catch (err) {
        observe(err);
        throw err;
      }
    },
    relaxed(work) {
      if (!relax || !restore) return db.transaction().execute(work);
      return db.connection().execute(async (connection) => {
        relax.run();
        try {
          return await connection.transaction().execute(work);
        } finally {
          restore.run();
        }
      });
    },
    relaxedSync: onConnection,
    locked(keys, work) {
      return db.transaction().execute(async (trx) => {
        if (dialect === 'postgres' && keys.length > 0) {
          const sorted = [...new Set(keys)].sort();
          await sql`SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest(${sorted}::text[]) AS k ORDER BY k`.execute(
            trx,
          );
        }
        return work(trx);
      });
    },
  };
}
