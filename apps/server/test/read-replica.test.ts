/**
 * Reads from a streaming replica (DATABASE_READ_URL, docs/deployment.md#reads-from-a-replica),
 * with a real one: a private primary and a `pg_basebackup -R` standby of it on ports of their own.
 * Streaming copies everything, so where a read went is shown by pausing the standby's replay
 * (`pg_wal_replay_pause()`): a call recorded then is on the primary only.
 *
 * - While the replica keeps up, History's list, count and export and the Dashboard's statistics
 *   come from it, and a call page it does not have yet from the primary.
 * - Behind by more than DATABASE_READ_MAX_LAG, or stopped, reads go to the primary; /readyz says
 *   so in its body and stays 200; the log says it once. Caught up or started again, reads go back
 *   to the replica.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRow, type TestApp, waitUntil } from './helpers.js';
import { privateReplicaAvailable } from './private-postgres.js';
import { type ReplicaApp, startAppWithReplica } from './replica-app.js';

const MAX_LAG = '3s';

const clusters = privateReplicaAvailable();
describe.skipIf(!clusters.ok)(
  `reads from a streaming replica${clusters.ok ? '' : ` (skipped: ${clusters.why})`}`,
  () => {
    let withReplica: ReplicaApp;
    let t: TestApp;
    const lines: string[] = [];

    beforeAll(async () => {
      withReplica = await startAppWithReplica(
        { DATABASE_READ_MAX_LAG: MAX_LAG },
        {
          level: 'info',
          stream: { write: (line: string) => void lines.push(line) },
        },
      );
      t = withReplica.t;
    }, 60_000);

    afterAll(() => withReplica?.close());

    const pauseReplay = async () => {
      await withReplica.onReplica('SELECT pg_wal_replay_pause()');
    };
    const resumeReplay = () => withReplica.onReplica('SELECT pg_wal_replay_resume()');

    /** A call recorded on the primary now; answers its id. */
    async function record(): Promise<number> {
      const row = await t.app.store.db
        .insertInto('calls')
        .values(callRow({ at: Date.now() }))
        .returning('id')
        .executeTakeFirstOrThrow();
      return Number(row.id);
    }
    const listed = async (): Promise<number[]> => {
      const res = await t.inject({ method: 'GET', url: '/api/calls?limit=100' });
      expect(res.statusCode).toBe(200);
      return res.json<{ items: { id: number }[] }>().items.map((i) => i.id);
    };
    const counted = async (): Promise<number> =>
      (await t.inject({ method: 'GET', url: '/api/calls/count' })).json<{ count: number }>().count;
    const exported = async (): Promise<number[]> => {
      const res = await t.inject({ method: 'GET', url: '/api/calls/export?format=json' });
      expect(res.statusCode).toBe(200);
      return res.json<{ id: number }[]>().map((c) => c.id);
    };
    /** Calls in the Dashboard's statistics (the last 24 hours). */
    const inStats = async (): Promise<number> => {
      const res = await t.inject({ method: 'GET', url: '/api/stats' });
      expect(res.statusCode).toBe(200);
      return res.json<{ rows: { count: number }[] }>().rows.reduce((n, r) => n + r.count, 0);
    };
    const readyz = async () => {
      const res = await t.app.inject({ method: 'GET', url: '/readyz' });
      return { status: res.statusCode, body: res.json<{ replica?: { state: string; reason?: string } }>() };
    };
    const replicaState = async () => (await readyz()).body.replica?.state;
    const waitForState = (state: string, timeoutMs = 10_000) =>
      waitUntil(async () => (await replicaState()) === state, { timeoutMs, what: `the replica ${state}` });
    const logged = (words: string) => lines.filter((l) => l.includes(words)).length;

    /** The replica's replay paused, a call recorded: answers whether the list lacks it (read from the replica). */
    async function readsFromReplica(): Promise<boolean> {
      await pauseReplay();
      try {
        const id = await record();
        return !(await listed()).includes(id);
      } finally {
        await resumeReplay();
      }
    }

    it('reads History and the Dashboard from the replica, a call page it does not have yet from the primary, and the primary while it lags', async () => {
      await waitForState('ok');
      const first = await record();
      // Replayed: the list, from the replica, has it.
      await waitUntil(async () => (await listed()).includes(first), {
        what: 'the first call on the replica',
      });

      await pauseReplay();
      const before = await counted();
      const fresh = await record();
      // Not on the replica yet: the list, the count, the export and the statistics lack it...
      expect(await listed()).not.toContain(fresh);
      expect(await counted()).toBe(before);
      expect(await exported()).not.toContain(fresh);
      expect(await inStats()).toBe(before);
      // ...and its page, asked right after it, comes from the primary.
      const page = await t.inject({ method: 'GET', url: `/api/calls/${fresh}` });
      expect(page.statusCode).toBe(200);
      expect(page.json()).toMatchObject({ id: fresh });
      expect(await replicaState()).toBe('ok');

      // Behind by more than DATABASE_READ_MAX_LAG: reads go to the primary, /readyz says so and stays 200.
      await waitForState('lagging');
      const ready = await readyz();
      expect(ready.status).toBe(200);
      expect(ready.body.replica).toMatchObject({ state: 'lagging' });
      expect(await listed()).toContain(fresh);
      expect(await counted()).toBe(before + 1);
      // The log says it once, not per request.
      expect(logged('lags more than DATABASE_READ_MAX_LAG')).toBe(1);

      // Caught up: back to the replica.
      await resumeReplay();
      await waitForState('ok');
      expect(await readsFromReplica()).toBe(true);
    }, 30_000);

    it('reads from the primary while the replica is down, and from the replica again once it is back', async () => {
      await waitForState('ok');
      await withReplica.replica.stop('immediate');
      // Asked before the watch has noticed: answered all the same, from the primary.
      expect((await listed()).length).toBeGreaterThan(0);
      await waitForState('down');
      const ready = await readyz();
      expect(ready.status).toBe(200);
      expect(ready.body.replica).toMatchObject({ state: 'down' });
      expect(ready.body.replica?.reason).toBeTruthy();
      const id = await record();
      expect(await listed()).toContain(id);
      expect((await t.inject({ method: 'GET', url: `/api/calls/${id}` })).statusCode).toBe(200);
      expect(logged('the read replica cannot be used')).toBe(1);

      await withReplica.replica.start();
      await waitForState('ok', 20_000);
      expect(await readsFromReplica()).toBe(true);
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toMatch(/^school_database_replica_used 1$/m);
      expect(metrics).toMatch(/^school_database_replica_lag_seconds \d/m);
    }, 40_000);
  },
);
