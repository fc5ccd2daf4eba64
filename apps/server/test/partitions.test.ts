/**
 * PostgreSQL's time partitions (store/partitions.ts, migration 0018): calls, deliveries and
 * attempts land in their period's partition, or in the default one when it has none; a period made
 * later takes its rows from the default; retiring a period drops it whole but keeps the deliveries
 * still on their way, with their calls and attempts; and a database from before partitioning is
 * upgraded with every row kept. Needs TEST_DATABASE_URL (skipped without it).
 */

import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OUTBOX_TABLES } from '../src/outbox/index.js';
import type { Database, NewCall } from '../src/store/index.js';
import { migrationProvider } from '../src/store/migrations.js';
import { callRow, tempDataDir, waitUntil } from './helpers.js';
import { openTestInstance, type TestInstance } from './instance.js';
import { type FreshDatabase, freshPostgres, TEST_DATABASE_URL } from './pg.js';

const DAY = 86_400_000;
/** A day boundary (UTC) ten days back: the periods the tests make and retire are around it. */
const D = Math.floor(Date.now() / DAY) * DAY - 10 * DAY;

/** A call at `at`, as the recorder gets it (helpers.ts callRow). */
const call = (at: number, overrides: Partial<NewCall> = {}): NewCall => callRow({ at, ...overrides });

/** Which partition holds each row of `table`, by id. */
async function placed(db: Kysely<Database>, table: string): Promise<Record<number, string>> {
  const { rows } = await sql<{ id: string; part: string }>`
    SELECT id::text AS id, tableoid::regclass::text AS part FROM ${sql.table(table)}`.execute(db);
  return Object.fromEntries(rows.map((r) => [Number(r.id), r.part]));
}

/** A delivery (and one attempt) written at `at`, of call `callId`, in `status`. */
async function delivery(db: Kysely<Database>, callId: number, at: number, status: string): Promise<number> {
  const { id } = await db
    .insertInto('deliveries')
    .values({
      call_id: callId,
      kind: 'push',
      provider: 'log',
      recipient: 'school-north',
      payload: '{}',
      secret: null,
      status: status as 'pending',
      attempts: 1,
      next_attempt_at: at,
      expires_at: null,
      idempotency_key: `key-${callId}-${at}`,
      created_at: at,
      updated_at: at,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('delivery_attempts')
    .values({ delivery_id: id, provider: 'log', started_at: at + 1000, outcome: 'transient' })
    .execute();
  return id;
}

describe.skipIf(!TEST_DATABASE_URL)('time partitions (PostgreSQL)', () => {
  let fresh: FreshDatabase;
  let instance: TestInstance;
  const data = tempDataDir();

  beforeEach(async () => {
    fresh = await freshPostgres();
    instance = await openTestInstance({
      dataDir: data.dir,
      synchronous: 'NORMAL',
      databaseUrl: fresh.url,
      partitionPeriod: 'day',
    });
  });
  afterEach(async () => {
    await instance.close();
    await fresh.drop();
  });

  it('puts each row in its period, a row no period holds in the default partition, and moves it when its period is made', async () => {
    const { store, recorder, history } = instance;
    const partitions = store.partitions;
    if (!partitions) throw new Error('no partitions on PostgreSQL');
    // Freshly migrated, before the first call: today and at least 7 days ahead, for each of the
    // three tables, and a default partition.
    const layouts = await partitions.layout();
    for (const layout of layouts) {
      expect(layout.default).toBe(`${layout.table}_default`);
      expect(layout.partitions.length).toBeGreaterThanOrEqual(8);
      expect(layout.partitions.map((p) => p.name.replace(layout.table, ''))).toEqual(
        layouts[0]?.partitions.map((p) => p.name.replace('calls', '')),
      );
    }
    expect(await partitions.coveredAhead(Date.now())).toBeGreaterThanOrEqual(7 * DAY);
    // Made again: nothing to do.
    expect(await partitions.ensureAhead(Date.now())).toEqual([]);

    const today = await recorder.record(call(Date.now()));
    const old = await recorder.record(call(D + 5000));
    expect(await placed(store.db, 'calls')).toEqual({
      [today]: `calls_p${new Date().toISOString().slice(0, 10).replaceAll('-', '')}`,
      [old]: 'calls_default',
    });
    expect(await partitions.defaultRows()).toBe(1);

    // The old day made now: its row moves out of the default partition, and is still found.
    expect(await partitions.ensure(D, D + DAY)).toEqual([
      `calls_p${new Date(D).toISOString().slice(0, 10).replaceAll('-', '')}`,
      `deliveries_p${new Date(D).toISOString().slice(0, 10).replaceAll('-', '')}`,
      `delivery_attempts_p${new Date(D).toISOString().slice(0, 10).replaceAll('-', '')}`,
    ]);
    expect((await placed(store.db, 'calls'))[old]).toMatch(/^calls_p\d{8}$/);
    expect(await partitions.defaultRows()).toBe(0);
    expect((await history.findById(old))?.at).toBe(D + 5000);
    expect((await history.findById(today))?.id).toBe(today);
    expect(await history.findById(today + old + 1)).toBeUndefined();
    expect(await history.count()).toBe(2);
  });

  it('takes a call whose period gets its partition while the call is written: the call goes there', async () => {
    const { store, recorder, history } = instance;
    const name = `calls_p${new Date(D).toISOString().slice(0, 10).replaceAll('-', '')}`;
    const attacher = new pg.Client({ connectionString: fresh.url });
    await attacher.connect();
    // Outside the attach's transaction, which would see activity as it was when it began.
    const watcher = new pg.Client({ connectionString: fresh.url });
    await watcher.connect();
    try {
      await attacher.query(`CREATE TABLE ${name} (LIKE calls INCLUDING DEFAULTS)`);
      await attacher.query('BEGIN');
      await attacher.query(
        `ALTER TABLE calls ATTACH PARTITION ${name} FOR VALUES FROM (${D}) TO (${D + DAY})`,
      );
      // The call's period has no partition yet: its row is for the default partition, whose lock
      // the attach holds until it commits.
      const recording = recorder.record(call(D + 7000));
      await waitUntil(
        async () => {
          const { rows } = await watcher.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          return (rows[0]?.n ?? 0) > 0;
        },
        { what: 'the call waiting for the attach', timeoutMs: 5000, intervalMs: 10 },
      );
      await attacher.query('COMMIT');
      const id = await recording;
      expect((await placed(store.db, 'calls'))[id]).toBe(name);
      expect((await history.findById(id))?.at).toBe(D + 7000);
    } finally {
      await attacher.end();
      await watcher.end();
    }
  });

  it('retires a period whole, keeping the deliveries still on their way with their calls and attempts', async () => {
    const { store, recorder, history } = instance;
    const partitions = store.partitions;
    if (!partitions) throw new Error('no partitions on PostgreSQL');
    await partitions.ensure(D, D + 2 * DAY);
    const settled = await recorder.record(call(D + 1000));
    const waiting = await recorder.record(call(D + 2000));
    // Queued after its call's period had ended: its call is in the retired period, it is not.
    const late = await recorder.record(call(D + DAY - 1));
    const next = await recorder.record(call(D + DAY + 1000));
    await delivery(store.db, settled, D + 1000, 'sent');
    const waitingDelivery = await delivery(store.db, waiting, D + 2000, 'pending');
    await delivery(store.db, late, D + DAY + 10, 'sending');
    await delivery(store.db, next, D + DAY + 1000, 'dead');

    const retired = await partitions.retire(D + DAY);
    const day = new Date(D).toISOString().slice(0, 10).replaceAll('-', '');
    expect([...retired.partitions].sort()).toEqual(
      [`calls_p${day}`, `deliveries_p${day}`, `delivery_attempts_p${day}`].sort(),
    );
    expect(retired.moved).toBe(1);
    // The settled call went with its period; the one waiting and the late one's call were kept.
    expect((await history.list({ limit: 10 })).map((c) => c.id).sort((a, b) => a - b)).toEqual(
      [waiting, late, next].sort((a, b) => a - b),
    );
    const calls = await placed(store.db, 'calls');
    expect(calls[waiting]).toBe('calls_default');
    expect(calls[late]).toBe('calls_default');
    const kept = await store.db
      .selectFrom('deliveries')
      .select(['id', 'call_id', 'status'])
      .orderBy('id')
      .execute();
    expect(kept.map((d) => d.call_id)).toEqual([waiting, late, next]);
    const attempts = await store.db.selectFrom('delivery_attempts').select('delivery_id').execute();
    expect(attempts.map((a) => a.delivery_id)).toContain(waitingDelivery);
    // Nothing left behind: no detached table, and the period is not made again by the job.
    const { rows: leftovers } = await sql<{ n: string }>`
      SELECT count(*)::text AS n FROM pg_class WHERE relname LIKE 'retired\\_%'`.execute(store.db);
    expect(leftovers[0]?.n).toBe('0');

    // Once it settles, retention's batch pass takes the kept call: it is below every period.
    await store.db
      .updateTable('deliveries')
      .set({ status: 'sent' })
      .where('id', '=', waitingDelivery)
      .execute();
    const below = await partitions.batchDeletedBelow();
    expect(below).toBe(D + DAY);
    const removed = await history.deleteOlderThan(Math.min(D + DAY, below ?? D + DAY), {
      alongside: instance.outbox.deleteForCalls,
    });
    expect(removed).toBe(1);
    expect(await history.findById(waiting)).toBeUndefined();
    // The late call stays while its delivery is on its way.
    expect(await history.findById(late)).toBeDefined();
  });

  it('ends a retirement the process did not finish: what was detached keeps its calls on their way, then goes', async () => {
    const { store, recorder, history } = instance;
    const partitions = store.partitions;
    if (!partitions) throw new Error('no partitions on PostgreSQL');
    await partitions.ensure(D, D + DAY);
    const settled = await recorder.record(call(D + 1000));
    const waiting = await recorder.record(call(D + 2000));
    await delivery(store.db, settled, D + 1000, 'sent');
    await delivery(store.db, waiting, D + 2000, 'pending');
    // As a retirement leaves the calls' partition when the process ends between its detach and
    // its end: detached and renamed, the rows still in it.
    const day = new Date(D).toISOString().slice(0, 10).replaceAll('-', '');
    await sql.raw(`ALTER TABLE calls DETACH PARTITION calls_p${day}`).execute(store.db);
    await sql.raw(`ALTER TABLE calls_p${day} RENAME TO retired_calls_p${day}`).execute(store.db);
    expect(await history.findById(waiting)).toBeUndefined();

    // The next retirement (nothing else to retire before D) ends it first.
    await partitions.retire(D);
    expect(await history.findById(waiting)).toMatchObject({ id: waiting });
    expect(await history.findById(settled)).toBeUndefined();
    expect((await placed(store.db, 'calls'))[waiting]).toBe('calls_default');
    const { rows: leftovers } = await sql<{ n: string }>`
      SELECT count(*)::text AS n FROM pg_class WHERE relname LIKE 'retired\\_%'`.execute(store.db);
    expect(leftovers[0]?.n).toBe('0');
  });

  it("records a provider's report about a message sent days ago, as about one sent now", async () => {
    const { store, recorder, outbox } = instance;
    await store.partitions?.ensure(D, D + DAY);
    await store.partitions?.ensureAhead(Date.now());
    const old = await delivery(store.db, await recorder.record(call(D + 10)), D + 10, 'sent');
    const recent = await delivery(store.db, await recorder.record(call(Date.now())), Date.now(), 'sent');
    await store.db
      .updateTable('deliveries')
      .set({ provider: 'twilio', provider_id: sql<string>`'SM' || id` })
      .execute();
    const report = (sid: string, status: string) =>
      outbox.deliveries.recordProviderStatus('twilio', sid, status, Date.now());
    expect(await report(`SM${old}`, 'delivered')).toBe(true);
    expect(await report(`SM${recent}`, 'undelivered (30003)')).toBe(true);
    expect(await report('SM0', 'delivered')).toBe(false);
    const rows = await store.db
      .selectFrom('deliveries')
      .select(['id', 'provider_status'])
      .orderBy('id')
      .execute();
    expect(rows).toEqual([
      { id: old, provider_status: 'delivered' },
      { id: recent, provider_status: 'undelivered (30003)' },
    ]);
  });

  it("reads History across partitions, the default's rows included, exactly as one table would", async () => {
    const { store, recorder, history } = instance;
    const partitions = store.partitions;
    if (!partitions) throw new Error('no partitions on PostgreSQL');
    await partitions.ensure(D - 5 * DAY, D + 5 * DAY);
    await partitions.ensureAhead(Date.now());
    // Calls before the oldest partition and in the gap after D + 5 days (default), in periods,
    // today and ahead; every third an SMS, some of which went dead; some with a needle.
    const times = [-8, -5.5, -4, -1, -0.2, 0, 0.3, 1, 2.5, 4.9, 6, 7.5, 9.99, 10, 10.4, 13].flatMap((d) =>
      [0, 1, 2, 3].map((k) => D + d * DAY + k * 1000),
    );
    for (const [i, at] of times.entries()) {
      await recorder.record(
        call(at, {
          operation: i % 2 ? 'AuthCode' : 'SendMarkNotes',
          response: i % 5 === 0 ? '<r>Needle</r>' : '<r>hay</r>',
        }),
        i % 3 === 0
          ? [
              {
                kind: 'sms',
                provider: 'log',
                recipient: '+447700900123',
                payload: { text: 'x 1', maskedText: 'x *' },
              },
            ]
          : [],
      );
    }
    await sql`UPDATE deliveries SET status = 'dead' WHERE id % 2 = 0`.execute(store.db);
    // As a server queues them, in the call's own commit: the recorder here took the test's clock
    // for the commit and the calls' given times for their arrival.
    await sql`UPDATE deliveries d SET created_at = c.at + 5 FROM calls c WHERE c.id = d.call_id`.execute(
      store.db,
    );
    expect(await partitions.defaultRows()).toBeGreaterThan(0);

    const truth = async (where = sql`TRUE`) =>
      (
        await sql<{
          id: string;
        }>`SELECT id::text FROM calls WHERE ${where} ORDER BY at DESC, id DESC`.execute(store.db)
      ).rows.map((r) => Number(r.id));
    const paged = async (query: Parameters<typeof history.search>[0]) => {
      const ids: number[] = [];
      let after: { at: number; id: number } | undefined;
      for (;;) {
        const rows = await history.search(query, { limit: 7, after });
        ids.push(...rows.map((r) => r.id));
        const last = rows.at(-1);
        if (rows.length < 7 || !last) return ids;
        after = { at: last.at, id: last.id };
      }
    };
    const from = D - 4.5 * DAY;
    const to = D + 10.2 * DAY;
    expect(await paged({})).toEqual(await truth());
    expect(await paged({ operation: 'AuthCode' })).toEqual(await truth(sql`operation = 'AuthCode'`));
    expect(await paged({ from, to })).toEqual(await truth(sql`at >= ${from} AND at < ${to}`));
    expect(await paged({ delivery: 'failed' })).toEqual(
      await truth(sql`id IN (SELECT call_id FROM deliveries WHERE status = 'dead')`),
    );
    expect(await paged({ delivery: 'failed', from })).toEqual(
      await truth(sql`at >= ${from} AND id IN (SELECT call_id FROM deliveries WHERE status = 'dead')`),
    );
    const scanned: number[] = [];
    for await (const batch of history.scanSummaries({ operation: 'SendMarkNotes' }, 5))
      scanned.push(...batch.map((r) => r.id));
    expect(scanned).toEqual(await truth(sql`operation = 'SendMarkNotes'`));
    const rowByRow: number[] = [];
    const rows = history.scanRows({ to }, { batchSize: 6, summaries: true }, (row) => rowByRow.push(row.id));
    while (await rows.next());
    expect(rowByRow).toEqual(await truth(sql`at < ${to}`));
    const needles: number[] = [];
    for await (const batch of history.scan({ q: 'needle' }, 4)) needles.push(...batch.map((r) => r.id));
    expect(needles).toEqual(await truth(sql`response LIKE '%Needle%'`));
    const page = await history.searchText({ q: 'NEEDLE', from }, { limit: 3 });
    expect(page.rows.map((r) => r.id)).toEqual(
      (await truth(sql`response LIKE '%Needle%' AND at >= ${from}`)).slice(0, 3),
    );
    // The list's delivery states, looked up within the page's time.
    const states = await instance.outbox.deliveries.ofCalls(await history.search({}, { limit: 64 }));
    expect(states.size).toBe(Math.ceil(times.length / 3));
  });

  it('retires without queueing for its locks while a transaction has the tables: no call waits behind it', async () => {
    const { store, recorder, history } = instance;
    const partitions = store.partitions;
    if (!partitions) throw new Error('no partitions on PostgreSQL');
    await partitions.ensure(D, D + 2 * DAY);
    const old = await recorder.record(call(D + 1000));
    // A long read of the calls (a report, a pg_dump): its lock on the table is held until it ends.
    const reader = new pg.Client({ connectionString: fresh.url });
    await reader.connect();
    const watcher = new pg.Client({ connectionString: fresh.url });
    await watcher.connect();
    try {
      await reader.query('BEGIN');
      await reader.query('SELECT 1 FROM calls LIMIT 1');
      const retiring = partitions.retire(D + DAY);
      // Meanwhile no session waits for a lock (a DETACH in the queue would, and the calls behind it).
      let waited = 0;
      for (let i = 0; i < 60; i++) {
        const { rows } = await watcher.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        waited = Math.max(waited, rows[0]?.n ?? 0);
        if (i === 30) await recorder.record(call(Date.now()));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(waited).toBe(0);
      expect(await history.findById(old)).toBeDefined();
      await reader.query('COMMIT');
      const retired = await retiring;
      expect(retired.partitions).toContain(
        `calls_p${new Date(D).toISOString().slice(0, 10).replaceAll('-', '')}`,
      );
      expect(await history.findById(old)).toBeUndefined();
    } finally {
      await reader.end();
      await watcher.end();
    }
  });
});

describe.skipIf(!TEST_DATABASE_URL)('upgrading an unpartitioned PostgreSQL database', () => {
  it('keeps every call, delivery and attempt, attached as the legacy partition, and numbers on from them', async () => {
    const fresh = await freshPostgres();
    const data = tempDataDir();
    const pool = new pg.Pool({ connectionString: fresh.url, max: 2 });
    const raw = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    let instance: TestInstance | undefined;
    try {
      // The database as the release before partitioning left it.
      const migrator = new Migrator({ db: raw, provider: migrationProvider('postgres', [OUTBOX_TABLES]) });
      const before = await migrator.migrateTo('0017_delivery_unsure_provider');
      expect(before.error).toBeUndefined();
      const now = Date.now();
      const callIds: number[] = [];
      for (let i = 0; i < 300; i++) {
        // As that release wrote them: no phone column yet (migration 0020).
        const { phone: _, ...row } = call(now - (300 - i) * 3_600_000, { params: JSON.stringify({ i }) });
        const { id } = await raw.insertInto('calls').values(row).returning('id').executeTakeFirstOrThrow();
        callIds.push(id);
        if (i % 3 === 0) await delivery(raw, id, now - (300 - i) * 3_600_000 + 5, i % 2 ? 'sent' : 'pending');
      }
      // Every column as written then: the phone (migration 0020), the school (0025) and the answer
      // by reference (0026) are added after, empty.
      const fingerprint = async (db: Kysely<Database>) => {
        const { rows } = await sql<{ calls: string; deliveries: string; attempts: string }>`
          SELECT
            (SELECT md5(string_agg((to_jsonb(c) - 'phone' - 'school_id' - 'response_ref')::text, '|' ORDER BY id)) FROM calls c) AS calls,
            (SELECT md5(string_agg((to_jsonb(d) - 'school_id')::text, '|' ORDER BY id)) FROM deliveries d) AS deliveries,
            (SELECT md5(string_agg(a::text, '|' ORDER BY id)) FROM delivery_attempts a) AS attempts`.execute(
          db,
        );
        return rows[0];
      };
      const was = await fingerprint(raw);

      instance = await openTestInstance({
        dataDir: data.dir,
        synchronous: 'NORMAL',
        databaseUrl: fresh.url,
        partitionPeriod: 'month',
      });
      const { store, recorder, history } = instance;
      await store.whenReady(
        () => {},
        (err) => {
          throw err;
        },
      );
      // Every row as it was, now in the legacy partitions.
      expect(await fingerprint(raw)).toEqual(was);
      expect(new Set(Object.values(await placed(raw, 'calls')))).toEqual(new Set(['calls_legacy']));
      expect(new Set(Object.values(await placed(raw, 'deliveries')))).toEqual(new Set(['deliveries_legacy']));
      const layouts = await store.partitions?.layout();
      for (const layout of layouts ?? []) {
        expect(layout.partitions[0]?.name).toBe(`${layout.table}_legacy`);
        expect(layout.partitions[0]?.from).toBeNull();
        // The days after it made ahead at start, from the legacy partition's end.
        expect(layout.partitions[1]?.from).toBe(layout.partitions[0]?.to);
      }
      expect(await store.partitions?.ensureAhead(Date.now())).toEqual([]);
      // New calls number on from the kept ones, and go to their periods.
      const newer = await recorder.record(call(Date.now() + 2 * DAY), [
        {
          kind: 'push',
          provider: 'log',
          recipient: 'school-north',
          payload: { title: 't', body: 'b', data: {} },
        },
      ]);
      expect(newer).toBeGreaterThan(Math.max(...callIds));
      expect((await placed(raw, 'calls'))[newer]).toMatch(/^calls_p\d{8}$/);
      expect(await history.count()).toBe(301);
      expect((await history.findById(callIds[0] as number))?.params).toBe(JSON.stringify({ i: 0 }));

      // Retention deletes the legacy partition's old rows in batches (it is not past as a
      // whole), keeping the calls whose deliveries are on their way; then drops it once it is.
      const cutoff = now - 150 * 3_600_000;
      expect(await store.partitions?.retire(cutoff)).toMatchObject({ partitions: [] });
      const below = Math.min(cutoff, (await store.partitions?.batchDeletedBelow()) ?? cutoff);
      const removed = await history.deleteOlderThan(below, { alongside: instance.outbox.deleteForCalls });
      // 150 calls were older; those of them with a pending delivery (every 6th) stay.
      expect(removed).toBe(150 - 25);
      const legacyEnd = layouts?.[0]?.partitions[0]?.to ?? 0;
      const retired = await store.partitions?.retire(legacyEnd);
      expect(retired?.partitions).toEqual(
        expect.arrayContaining(['calls_legacy', 'deliveries_legacy', 'delivery_attempts_legacy']),
      );
      // The pending deliveries, their attempts and calls are kept (in the default partitions).
      const pending = await raw
        .selectFrom('deliveries')
        .select('call_id')
        .where('status', '=', 'pending')
        .where('call_id', '<>', newer)
        .execute();
      expect(pending).toHaveLength(50);
      expect(await history.count()).toBe(1 + 50);
    } finally {
      await instance?.close();
      await raw.destroy();
      await fresh.drop();
      data.remove();
    }
  });
});
