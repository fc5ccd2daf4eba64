import type { PostgresPool } from 'kysely';
import { isConnectionError } from './availability.js';
import type { Store } from './store.js';

// Jobs that must not run at once: by name, across instances (PostgreSQL session advisory locks)
// and within this process. What `Store.exclusively` and `Store.serially` (open.ts) are made of.

/** What `withSessionLock` answers when it did not get the lock (`try`). */
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

/**
 * The store's `exclusively` and `serially` (store.ts): on PostgreSQL session advisory locks on
 * `pool`, so that instances sharing the database take turns; without a pool (SQLite) in this process
 * alone, the only one on its file.
 */
export function jobLocks(
  pool: PostgresPool | undefined,
  isClosing: () => boolean,
): Pick<Store, 'exclusively' | 'serially'> {
  const inProcess = localQueue();
  return {
    async exclusively(name, job) {
      if (isClosing()) return false;
      if (pool === undefined) {
        await job();
        return true;
      }
      const ran = await withSessionLock(pool, `job:${name}`, 'try', job);
      return ran !== NOT_TAKEN;
    },
    serially(name, job) {
      // In this process first: one pooled connection waits for the lock, not one per request.
      return inProcess(name, async () => {
        if (pool === undefined) return job();
        return (await withSessionLock(pool, `serial:${name}`, 'wait', job)) as Awaited<
          ReturnType<typeof job>
        >;
      });
    },
  };
}
