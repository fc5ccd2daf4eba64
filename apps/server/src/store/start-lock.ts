import { type Kysely, sql } from 'kysely';
import { isConnectionError } from './availability.js';
import type { Database } from './schema.js';

/**
 * The advisory lock a PostgreSQL start holds for its one-time work: the migrations, then the
 * current periods' partitions (docs/deployment.md#several-instances-on-postgresql). Instances
 * started together (a first rollout, an upgrade) would otherwise run them at once, and
 * PostgreSQL's `CREATE … IF NOT EXISTS` is not safe against a concurrent creation: the loser fails
 * on the catalogue's unique index (pg_type_typname_nsp_index) and its start with it. The `start:`
 * prefix is used by no other lock (the store's are `job:`, `serial:`, `limit:` and table names;
 * Kysely's migrator has a fixed number of its own, which it takes inside this one).
 */
export const START_LOCK_KEY = 'start:schema';

/** How often a start waiting for the lock asks for it again. */
const RETRY_MS = 250;

export interface StartLockOptions {
  /** The lock is held by another start: this one waits (told once). */
  readonly onWait: () => void;
  /** The lock was had; the work begins. */
  readonly onHeld: () => void;
  /** Whether the store was closed meanwhile: the wait ends with an error. */
  readonly stopped: () => boolean;
}

/**
 * Runs `job` holding START_LOCK_KEY on one connection of `db`, which the job is given: the lock
 * lives in the connection the work runs on, so a connection lost mid-way loses both together, and
 * nothing goes on without the lock. Asked for again every RETRY_MS rather than queued for
 * (pg_advisory_lock), so that a store closed while it waits stops waiting.
 */
export async function underStartLock<T>(
  db: Kysely<Database>,
  options: StartLockOptions,
  job: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  return db.connection().execute(async (conn) => {
    for (let asked = 0; ; asked++) {
      const { rows } = await sql<{
        ok: boolean;
      }>`SELECT pg_try_advisory_lock(hashtextextended(${START_LOCK_KEY}, 0)) AS ok`.execute(conn);
      if (rows[0]?.ok) break;
      if (asked === 0) options.onWait();
      if (options.stopped()) throw new Error('The store was closed while another instance was migrating.');
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
    options.onHeld();
    try {
      return await job(conn);
    } finally {
      // A connection lost meanwhile has lost its lock with it.
      await sql`SELECT pg_advisory_unlock(hashtextextended(${START_LOCK_KEY}, 0))`
        .execute(conn)
        .catch((err: unknown) => {
          if (!isConnectionError(err)) throw err;
        });
    }
  });
}
