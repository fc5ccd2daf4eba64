import type { PostgresPool, PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { describeError, isConnectionError, trackAvailability } from './availability.js';
import { type DbLog, newPool } from './db.js';
import { createPause } from './pause.js';

/**
 * Reads from a streaming replica (DATABASE_READ_URL, docs/deployment.md#reads-from-a-replica).
 *
 * The store's `reads` (store/open.ts) are a Kysely over `routedPool`: each connection it hands
 * out is the replica's while the replica is `ok`, else the primary's. Which reads use `reads` is
 * said where the store declares it; the decision of where they go is made here alone, by one
 * watch (`watchReplica`) on a timer, never by a request.
 *
 * The lag is measured by write-ahead-log positions, not by the replica's replay timestamp (which
 * grows while the primary is idle): at each check the primary's position is noted with the time,
 * then the replica's replayed position is read; the lag is the age of the oldest position noted
 * that the replica has not replayed yet, and zero once it has replayed the newest. It is right to
 * within one check interval.
 */

export type ReplicaState = 'ok' | 'lagging' | 'down';

export interface ReplicaStatus {
  /** `ok`: reads go to it; `lagging` (behind by more than the setting) or `down`: to the primary. */
  readonly state: ReplicaState;
  /** How far behind the primary it was at the last check (ms); null while it cannot be read. */
  readonly lagMs: number | null;
  /** Why it is not used, in words; null when `ok`. */
  readonly reason: string | null;
  /** When this state began (epoch ms). */
  readonly since: number;
}

export interface ReadReplica {
  status(): ReplicaStatus;
  /** Whether reads go to the replica now. */
  inUse(): boolean;
}

export interface ReplicaOptions {
  /** The replica (DATABASE_READ_URL). */
  readonly readUrl: string;
  /** The primary (DATABASE_URL), for its write-ahead-log position. */
  readonly primaryUrl: string;
  /** The primary's pool, as every query reaches it (gated): where reads go when not to the replica. */
  readonly primary: PostgresPool;
  /** DATABASE_READ_MAX_LAG (ms). */
  readonly maxLagMs: number;
  /** Connections to the replica at most. */
  readonly poolSize: number;
  /** A query taking longer than this fails, as on the primary (ms). */
  readonly queryTimeoutMs: number;
  readonly log: DbLog;
  /** Between checks (ms); default a fifth of the lag allowed, from 200 ms to 1 s. */
  readonly intervalMs?: number;
  /** A check taking longer than this counts as failed (ms). */
  readonly timeoutMs?: number;
}

export interface OpenedReplica {
  /** The pool the store's `reads` use: the replica's connections while it is `ok`, else the primary's. */
  readonly pool: PostgresPool;
  readonly replica: ReadReplica;
  /** Stops the watch and closes the replica's connections (not the primary's). */
  close(): Promise<void>;
}

export function openReadReplica(options: ReplicaOptions): OpenedReplica {
  // Whether the replica answers, for its pool: a connection lost there asks the watch to check now.
  const reachable = trackAvailability('not checked yet');
  const raw = newPool(options.readUrl, reachable, {
    max: options.poolSize,
    query_timeout: options.queryTimeoutMs,
    application_name: 'school-messaging-read',
    // Nothing is written through this pool; a standby refuses writes anyway.
    options: '-c default_transaction_read_only=on',
  });
  const watch = watchReplica(options, reachable);
  const pool = routedPool(raw, options.primary, watch.replica, (err) => reachable.observe(err));
  return {
    pool,
    replica: watch.replica,
    async close() {
      await watch.close();
      await raw.end();
    },
  };
}

/** What a standby answers when replaying the log had to cancel a query that needed what it removes. */
const RECOVERY_CONFLICT = /conflict with recovery/i;

/** Whether a read that failed on the replica is run again on the primary. */
function retriedOnPrimary(err: unknown): boolean {
  if (isConnectionError(err)) return true;
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40001' && err instanceof Error && RECOVERY_CONFLICT.test(err.message);
}

/**
 * The pool `reads` use. While the replica is `ok`, a connection is the replica's; one that cannot
 * be had (the replica just went away) is the primary's instead. A read that fails on the replica
 * because its connection was lost, or because replaying the log cancelled it, is run once more on
 * the primary: the primary has everything the replica has. Kysely's reads are single statements
 * (no transaction), so running one again is safe. Otherwise the connection is the primary's.
 */
function routedPool(
  raw: pg.Pool,
  primary: PostgresPool,
  replica: ReadReplica,
  observe: (err: unknown) => void,
): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const onPrimary = async (args: unknown[]) => {
    const client = await primary.connect();
    try {
      return await (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
    } finally {
      client.release();
    }
  };
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client);
    if (wrapper) return wrapper;
    let broken: Error | undefined;
    wrapper = {
      query(...args: unknown[]) {
        const result = (client.query as (...a: unknown[]) => unknown)(...args);
        // A cursor (Kysely's `stream`) is handed back as it is: it cannot be run again.
        if (!result || typeof (result as Promise<unknown>).then !== 'function') return result;
        return (result as Promise<unknown>).catch((err: unknown) => {
          if (isConnectionError(err)) {
            broken ??= err as Error;
            observe(err);
          }
          if (!retriedOnPrimary(err)) throw err;
          return onPrimary(args);
        });
      },
      release() {
        const err = broken;
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
      if (replica.inUse()) {
        try {
          return wrap(await raw.connect());
        } catch (err) {
          if (!isConnectionError(err)) throw err;
          observe(err);
        }
      }
      return primary.connect();
    },
    // The primary's pool is the store's to end.
    end: async () => {},
  };
}

/** An LSN (`16/B374D848`) as a number of bytes. */
function lsnBytes(text: string): bigint {
  const [hi = '0', lo = '0'] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

/** The primary's positions noted at most: past that the two oldest are merged (the lag stays an upper bound). */
const MAX_SAMPLES = 256;

/** pg's words for a query that got no answer within its `query_timeout`. */
const NO_ANSWER = /Query read timeout/i;

/**
 * The replica's watch: one timer, two connections of its own outside the pools (one to the
 * replica, one to the primary), a check every `intervalMs`. A state change is one line in the log.
 * - down: the replica does not answer within `timeoutMs` (a dropped connection is tried once more
 *   at once first), is not a standby (`pg_is_in_recovery()` false: promoted, or not a replica),
 *   or has replayed nothing yet;
 * - lagging: it answers, behind by more than `maxLagMs`; `ok` again once within half of that;
 * - ok otherwise.
 * When the primary cannot be read, the lag is judged on the positions already noted.
 */
function watchReplica(
  options: ReplicaOptions,
  reachable: ReturnType<typeof trackAvailability>,
): { replica: ReadReplica; close(): Promise<void> } {
  const { log, maxLagMs } = options;
  const intervalMs = options.intervalMs ?? Math.min(1000, Math.max(200, Math.floor(maxLagMs / 5)));
  const timeoutMs = options.timeoutMs ?? 2000;
  let status: ReplicaStatus = { state: 'down', lagMs: null, reason: 'not checked yet', since: Date.now() };
  /** The state last said in the log (none at first). */
  let said: ReplicaState | undefined;
  let closed = false;
  const pause = createPause();

  const primary = watchConnection(options.primaryUrl, timeoutMs);
  const replicaConnection = watchConnection(options.readUrl, timeoutMs);
  const measure = lagMeter(primary, replicaConnection);

  const become = (state: ReplicaState, lagMs: number | null, reason: string | null) => {
    const now = Date.now();
    status = { state, lagMs, reason, since: status.state === state ? status.since : now };
    if (state === 'down') reachable.markDown(reason ?? 'down');
    else reachable.markUp();
    if (said === state) return;
    sayState(log, maxLagMs, status);
    said = state;
  };

  const onCheck = () => pause.wake();
  reachable.events.on('check', onCheck);

  async function run(): Promise<void> {
    let failures = 0;
    while (!closed) {
      try {
        const lagMs = await measure();
        if (closed) break;
        failures = 0;
        const limit = status.state === 'lagging' ? maxLagMs / 2 : maxLagMs;
        if (lagMs > limit)
          become(
            'lagging',
            lagMs,
            `behind the primary by ${(lagMs / 1000).toFixed(1)} s, more than ${maxLagMs / 1000} s`,
          );
        else become('ok', lagMs, null);
      } catch (err) {
        if (closed) break;
        failures++;
        const reason = err instanceof NotUsable ? err.message : describeError(err);
        // One dropped connection is tried again at once; no answer at all is not mended by asking again.
        if (
          failures === 1 &&
          status.state !== 'down' &&
          !(err instanceof NotUsable) &&
          !NO_ANSWER.test(reason)
        )
          continue;
        become(
          'down',
          null,
          NO_ANSWER.test(reason) ? `no answer within ${timeoutMs} ms (${reason})` : reason,
        );
      }
      await pause.wait(intervalMs);
    }
  }

  const running = run();
  return {
    replica: {
      status: () => status,
      inUse: () => status.state === 'ok',
    },
    async close() {
      closed = true;
      reachable.events.off('check', onCheck);
      pause.wake();
      await running;
      await Promise.all([primary.drop(), replicaConnection.drop()]);
    },
  };
}

/** The replica answers but must not be read from. */
class NotUsable extends Error {}

/** A state the watch has come to, as one line in the log. */
function sayState(log: DbLog, maxLagMs: number, { state, lagMs, reason }: ReplicaStatus): void {
  const lag = lagMs === null ? undefined : Math.round(lagMs);
  if (state === 'ok')
    log.info(
      { lagMs: lag },
      'the read replica is used: History, exports, search and the Dashboard read from it',
    );
  else if (state === 'lagging')
    log.warn(
      { lagMs: lag, maxLagMs },
      'the read replica lags more than DATABASE_READ_MAX_LAG: reads go to the primary until it catches up',
    );
  else log.warn({ reason }, 'the read replica cannot be used: reads go to the primary until it can');
}

/** One connection of the watch's own, outside the pools: made when first needed, dropped on an error. */
interface WatchConnection {
  /** The first row of `text`'s answer ({} when none); fails after `timeoutMs` without one. */
  query<R extends object>(text: string): Promise<R>;
  drop(): Promise<void>;
}

function watchConnection(url: string, timeoutMs: number): WatchConnection {
  const name = 'school-messaging-replica-watch';
  let client: pg.Client | undefined;
  const drop = async () => {
    const c = client;
    client = undefined;
    // Ending a connection that already failed can itself fail: nothing more to do with it.
    await c?.end().catch(() => {});
  };
  return {
    async query<R extends object>(text: string): Promise<R> {
      if (!client) {
        const c = new pg.Client({
          connectionString: url,
          application_name: name,
          connectionTimeoutMillis: timeoutMs,
          query_timeout: timeoutMs,
          keepAlive: true,
        });
        // Every connection handles `error`: one without a listener would end the process.
        c.on('error', () => {
          if (client === c) void drop();
        });
        try {
          await c.connect();
        } catch (err) {
          c.end().catch(() => {});
          throw err;
        }
        client = c;
      }
      try {
        const result = await client.query(text);
        return (result.rows[0] ?? {}) as R;
      } catch (err) {
        void drop();
        throw err;
      }
    },
    drop,
  };
}

/**
 * The lag, measured: at each call the primary's position first, then the replica's replayed one
 * (the module's comment says how). Fails with NotUsable when the replica is no standby or has
 * replayed nothing, and as its connection fails; when the primary cannot be read, the lag is
 * judged on the positions already noted.
 */
function lagMeter(primary: WatchConnection, replica: WatchConnection): () => Promise<number> {
  /** The primary's positions, oldest first, with when each was read; those replayed are dropped. */
  const samples: { lsn: bigint; at: number }[] = [];
  return async function measure(): Promise<number> {
    try {
      const { lsn } = await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
      const sample = { lsn: lsnBytes(lsn), at: Date.now() };
      if (samples.length >= MAX_SAMPLES) {
        // The oldest time with the later position: the lag is overstated, never understated.
        const [first, second] = samples;
        if (first && second) samples.splice(0, 2, { lsn: second.lsn, at: first.at });
      }
      samples.push(sample);
    } catch {
      // The primary away: its own watch says so; the lag is judged on what was noted.
    }
    const row = await replica.query<{ standby: boolean; replayed: string | null }>(
      'SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS replayed',
    );
    if (!row.standby)
      throw new NotUsable('it is not a standby (pg_is_in_recovery() is false): promoted, or not a replica');
    if (row.replayed === null) throw new NotUsable('it has replayed nothing yet');
    const replayed = lsnBytes(row.replayed);
    while (samples.length > 0 && (samples[0] as { lsn: bigint }).lsn <= replayed) samples.shift();
    const oldest = samples[0];
    return oldest ? Math.max(0, Date.now() - oldest.at) : 0;
  };
}
