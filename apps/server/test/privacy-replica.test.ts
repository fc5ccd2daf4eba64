/**
 * Erasing a number with a read replica (DATABASE_READ_URL; issue 45), with a real one: a private
 * primary and a `pg_basebackup -R` standby of it (read-replica.test.ts). The erasure finds what
 * to erase on the primary — a call recorded while the replica's replay is paused is erased too —
 * and once the replica has replayed it, History read from the replica no longer shows the number.
 */
import type { CallDetail, CallList, PrivacyErasure } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRow, type TestApp, waitUntil } from './helpers.js';
import { privateReplicaAvailable } from './private-postgres.js';
import { type ReplicaApp, startAppWithReplica } from './replica-app.js';

const PHONE = '+447458913276';

const clusters = privateReplicaAvailable();
describe.skipIf(!clusters.ok)(
  `erasing a number with a read replica${clusters.ok ? '' : ` (skipped: ${clusters.why})`}`,
  () => {
    let withReplica: ReplicaApp;
    let t: TestApp;

    beforeAll(async () => {
      withReplica = await startAppWithReplica({ DATABASE_READ_MAX_LAG: '30s', DEFAULT_PHONE_REGION: 'GB' });
      t = withReplica.t;
    }, 90_000);

    afterAll(() => withReplica?.close());

    const onReplica = (text: string) => withReplica.onReplica(text);
    const list = async (query: string): Promise<number[]> => {
      const res = await t.inject({ method: 'GET', url: `/api/calls?${query}` });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as CallList).items.map((c) => c.id);
    };
    const code = async (phone: string): Promise<number> => {
      const res = await t.app.inject({
        method: 'GET',
        url: `/AuthCodeSending.asmx/AuthCode?code=1234&phone=${encodeURIComponent(phone)}`,
      });
      expect(res.statusCode).toBe(200);
      // The primary's newest call (History's list reads the replica, which may not have it yet).
      const row = await t.app.store.db
        .selectFrom('calls')
        .select('id')
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirstOrThrow();
      return Number(row.id);
    };

    it('erases on the primary what the replica has not replayed yet, and History on the replica shows the number no more', async () => {
      const first = await code(PHONE);
      // A call from before calls kept their phone: found by its text alone.
      const legacy = await t.app.store.db
        .insertInto('calls')
        .values(callRow({ at: Date.now() - 1000, phone: null, params: '{"phone":"07458 913276"}' }))
        .returning('id')
        .executeTakeFirstOrThrow();
      // History reads the replica: it has both once replayed.
      await waitUntil(async () => (await list('q=913276')).length === 2, {
        what: 'the calls on the replica',
      });
      expect(await list(`phone=${encodeURIComponent(PHONE)}`)).toEqual([first]);

      await onReplica('SELECT pg_wal_replay_pause()');
      let erased: PrivacyErasure;
      let late: number;
      try {
        late = await code('07458 913276');
        const res = await t.inject({ method: 'POST', url: '/api/privacy/erase', payload: { phone: PHONE } });
        expect(res.statusCode, res.body).toBe(200);
        erased = res.json() as PrivacyErasure;
        // The replica, paused, still shows what it had.
        expect(await list(`phone=${encodeURIComponent(PHONE)}`)).toEqual([first]);
      } finally {
        await onReplica('SELECT pg_wal_replay_resume()');
      }
      // The call the replica had not seen was erased too (found on the primary).
      expect(erased).toMatchObject({ calls: 3, deliveries: 2 });
      expect(erased.disk.vacuumed.length).toBeGreaterThan(0);
      // Replayed: History on the replica finds the number nowhere, and says erased.
      await waitUntil(async () => (await list(`phone=${encodeURIComponent(PHONE)}`)).length === 0, {
        what: 'the erasure on the replica',
      });
      expect(await list('q=913276')).toEqual([]);
      expect(await list('q=7458913276')).toEqual([]);
      for (const id of [first, late, legacy.id]) {
        const detail = (await t.inject({ method: 'GET', url: `/api/calls/${id}` })).json() as CallDetail;
        expect(detail.params?.phone, String(id)).toBe('[erased]');
      }
      expect((await list('q=%5Berased%5D')).sort()).toEqual([first, late, legacy.id].sort());
    });
  },
);
