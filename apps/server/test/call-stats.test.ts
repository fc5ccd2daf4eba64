import type { CallCount, CallList, Stats } from '@school/contract';
import type { Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { countCalls } from '../src/history/call-count.js';
import { matchesCall } from '../src/history/index.js';
import type { NewDelivery } from '../src/outbox/index.js';
import { OUTBOX_TABLES } from '../src/outbox/index.js';
import { bucketCounts, callStats, percentileOf, type StatsRow } from '../src/stats/call-stats.js';
import type { CallRow, NewCall, Store } from '../src/store/index.js';
import { migrationProvider } from '../src/store/migrations.js';
import { callRow, type TestApp } from './helpers.js';
import { DIALECTS, openTestStoresOn, startTestAppOn, type TestStores } from './pg.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 2, 9, 0, 0);

const sms: NewDelivery = {
  kind: 'sms',
  provider: 'twilio',
  recipient: '+447700900123',
  payload: { text: 'Your code is 123456', maskedText: 'Your code is ******' },
};

/** A small but real PDF (one empty page), padded to `size` bytes with a comment. */
function pdf(size: number): Buffer {
  const head =
    '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\n';
  const tail = 'trailer<</Root 1 0 R>>\n%%EOF\n';
  return Buffer.concat([
    Buffer.from(head),
    Buffer.alloc(size - head.length - tail.length, '%'),
    Buffer.from(tail),
  ]);
}

describe('latency percentiles from a histogram', () => {
  it('lands within a few per cent of the exact value', () => {
    // 1..1000 ms, one call each: the exact median is 500.5, the 95th percentile 950.05.
    const histogram = new Map<number, number>();
    for (let ms = 1; ms <= 1000; ms++) {
      const bin = Math.floor(Math.log(ms + 1) * 8);
      histogram.set(bin, (histogram.get(bin) ?? 0) + 1);
    }
    expect(percentileOf(histogram, 0.5)).toBeGreaterThan(500.5 * 0.95);
    expect(percentileOf(histogram, 0.5)).toBeLessThan(500.5 * 1.05);
    expect(percentileOf(histogram, 0.95)).toBeGreaterThan(950 * 0.95);
    expect(percentileOf(histogram, 0.95)).toBeLessThan(950 * 1.05);
    expect(percentileOf(new Map(), 0.5)).toBe(0);
  });
});

describe.each(DIALECTS)('call statistics on %s', (dialect) => {
  let store: Store;

  let stores: TestStores;
  beforeEach(async () => {
    stores = await openTestStoresOn(dialect, { poolSize: 4 });
    store = stores.store;
  });
  afterEach(() => stores.close());

  const record = (overrides: Partial<NewCall>, deliveries?: NewDelivery[]) =>
    stores.recorder.record(callRow({ at: T0, ...overrides }), deliveries);

  it('counts, times and explains the calls of each bucket, however the period is sliced', async () => {
    // Six hours: in each, 18 AuthCode calls taking 10 ms and two taking 1 s; one unknown call; errors.
    for (let h = 0; h < 6; h++) {
      for (let i = 0; i < 20; i++)
        await record({ at: T0 + h * HOUR + i * 60_000, duration_ms: i % 10 === 9 ? 1000 : 10 });
    }
    await record({
      at: T0 + HOUR,
      operation: null,
      outcome: 'client-error',
      status: 404,
      error: 'No such operation.',
    });
    await record({ at: T0 + 2 * HOUR, outcome: 'client-error', status: 400, error: "Invalid phone: 'x'." });
    await record({ at: T0 + 3 * HOUR, outcome: 'client-error', status: 400, error: "Invalid phone: 'x'." });
    await record({ at: T0 + 4 * HOUR, outcome: 'client-error', status: 400, error: "Invalid phone: 'y'." });
    await record({ at: T0 + 5 * HOUR, outcome: 'server-error', status: 500, error: 'Internal error.' });

    const range = { from: T0, to: T0 + 6 * HOUR, bucketMs: HOUR };
    const stats = await callStats(store.db, store.dialect, range);

    // The slices add up to what one query over the period counts.
    const sorted = (rows: StatsRow[]) =>
      [...rows].sort(
        (a, b) =>
          a.bucket - b.bucket || `${a.operation}${a.outcome}`.localeCompare(`${b.operation}${b.outcome}`),
      );
    expect(sorted(stats.rows)).toEqual(sorted(await bucketCounts(store.db, range)));
    expect(stats.rows.filter((r) => r.bucket === T0 + HOUR)).toEqual([
      { bucket: T0 + HOUR, operation: 'AuthCode', outcome: 'ok', count: 20 },
      { bucket: T0 + HOUR, operation: null, outcome: 'client-error', count: 1 },
    ]);

    expect(stats.latency).toHaveLength(6);
    const first = stats.latency[0];
    expect(first).toMatchObject({ bucket: T0, count: 20 });
    // 18 of 20 calls took 10 ms: the median is about 10 ms, the 95th percentile among the slow ones.
    expect(first?.p50Ms).toBeGreaterThan(9);
    expect(first?.p50Ms).toBeLessThan(11);
    expect(first?.p95Ms).toBeGreaterThan(950);
    expect(first?.p95Ms).toBeLessThan(1050);
    expect(stats.overallLatency?.p50Ms).toBeLessThan(11);

    expect(stats.statuses).toEqual([
      { status: 400, outcome: 'client-error', count: 3 },
      { status: 404, outcome: 'client-error', count: 1 },
      { status: 500, outcome: 'server-error', count: 1 },
    ]);
    expect(stats.errors[0]).toEqual({
      operation: 'AuthCode',
      status: 400,
      outcome: 'client-error',
      error: "Invalid phone: 'x'.",
      count: 2,
    });
    expect(stats.errors).toHaveLength(4);
    const top2 = await callStats(store.db, store.dialect, range, { errorLimit: 2 });
    expect(top2.errors).toHaveLength(2);
    expect(top2.otherErrors).toBe(2);
  });

  it('counts the deliveries queued in each bucket by what became of them', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await record({ at: T0 + i }, [sms]));
    await record({ at: T0 + 2 }, [{ ...sms, provider: 'log' }]);
    const rows = await store.db
      .selectFrom('deliveries')
      .select(['id', 'call_id', 'provider'])
      .orderBy('id')
      .execute();
    const [a, b, c, d, e, logged] = rows.map((r) => r.id);
    const set = (
      id: number | undefined,
      status: 'sent' | 'dead' | 'expired' | 'pending',
      createdAt: number,
      attempts = 1,
    ) =>
      store.db
        .updateTable('deliveries')
        .set({ status, created_at: createdAt, attempts })
        .where('id', '=', id as number)
        .execute();
    // Sent at the second attempt (one failed), sent at once, dead after two failed attempts.
    await set(a, 'sent', T0 + 10, 2);
    await set(b, 'sent', T0 + 20);
    await set(c, 'dead', T0 + 30, 2);
    // An auth code not sent in time; one waiting for its first attempt.
    await set(d, 'expired', T0 + HOUR + 10, 0);
    await set(e, 'pending', T0 + HOUR + 20, 0);
    await set(logged, 'sent', T0 + 40);

    const stats = await callStats(store.db, store.dialect, { from: T0, to: T0 + 2 * HOUR, bucketMs: HOUR });
    expect(stats.deliveries).toEqual([
      { bucket: T0, sent: 2, logged: 1, dead: 1, expired: 0, waiting: 0, failedAttempts: 3 },
      { bucket: T0 + HOUR, sent: 0, logged: 0, dead: 0, expired: 1, waiting: 1, failedAttempts: 0 },
    ]);
  });

  it('counts the calls a filter matches up to a bound, unknown operations included', async () => {
    for (let i = 0; i < 12; i++) await record({ at: T0 + i });
    for (let i = 0; i < 3; i++) await record({ at: T0 + 100 + i, operation: null });
    expect(await countCalls(store.db, {}, 10)).toEqual({ count: 10, more: true });
    expect(await countCalls(store.db, {}, 15)).toEqual({ count: 15, more: false });
    expect(await countCalls(store.db, { operation: '(unknown)' }, 10)).toEqual({ count: 3, more: false });
    expect(await countCalls(store.db, { operation: 'AuthCode', from: T0 + 10 }, 10)).toEqual({
      count: 2,
      more: false,
    });
  });

  it('puts right the outcome of calls recorded before it followed the status', async () => {
    const ids = {
      range: await record({ operation: 'GetBookPdfByTerm', status: 416 }),
      notModified: await record({ status: 304 }),
      failed: await record({ status: 503 }),
      clientFault: await record({ outcome: 'client-error', status: 500 }),
      refused: await record({ outcome: 'server-error', status: 429 }),
    };
    await stores.recorder.flush();
    // The migration, as a database recorded by an older release meets it.
    const migrations = await migrationProvider(dialect, [OUTBOX_TABLES]).getMigrations();
    await migrations['0011_outcome_by_status']?.up(store.db as Kysely<unknown>);
    const outcome = async (id: number) => (await stores.history.findById(id))?.outcome;
    expect(await outcome(ids.range)).toBe('client-error');
    expect(await outcome(ids.notModified)).toBe('ok');
    expect(await outcome(ids.failed)).toBe('server-error');
    expect(await outcome(ids.clientFault)).toBe('client-error');
    expect(await outcome(ids.refused)).toBe('client-error');
  });
});

describe.each(DIALECTS)('outcomes, counts and statistics through the API (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestAppOn(dialect, { MAX_BOOK_BYTES: '65536' });
  });
  afterAll(async () => {
    await t.close();
  });
  const get = async <T>(url: string) => {
    const res = await t.inject({ method: 'GET', url });
    return { status: res.statusCode, body: res.json() as T };
  };

  it('records a book range answered 416 as a client error, which the Client error filter finds', async () => {
    const up = await t.inject({
      method: 'PUT',
      url: '/api/books/2026-1/7B?filename=maths.pdf',
      headers: { 'content-type': 'application/pdf' },
      payload: pdf(10_000),
    });
    expect(up.statusCode).toBe(200);
    const from = new Date().toISOString();
    const beyond = await t.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=&classId=7B',
      headers: { range: 'bytes=20000-' },
    });
    expect(beyond.statusCode).toBe(416);
    const whole = await t.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=&classId=7B',
    });
    expect(whole.statusCode).toBe(200);

    const errors = await get<CallList>(
      `/api/calls?outcome=client-error&operation=GetBookPdfByTerm&from=${from}`,
    );
    expect(errors.body.items.map((c) => [c.status, c.outcome])).toEqual([[416, 'client-error']]);
    const ok = await get<CallList>(`/api/calls?outcome=ok&operation=GetBookPdfByTerm&from=${from}`);
    expect(ok.body.items.map((c) => c.status)).toEqual([200]);

    const stats = await get<Stats>(`/api/stats?from=${from}&bucket=hour`);
    expect(stats.body.statuses).toEqual([{ status: 416, outcome: 'client-error', count: 1 }]);
    expect(stats.body.errors[0]).toMatchObject({
      operation: 'GetBookPdfByTerm',
      status: 416,
      outcome: 'client-error',
    });
    const counted = stats.body.rows.filter((r) => r.operation === 'GetBookPdfByTerm');
    expect(counted.map((r) => [r.outcome, r.count]).sort()).toEqual([
      ['client-error', 1],
      ['ok', 1],
    ]);
    expect(stats.body.latency.reduce((n, r) => n + r.count, 0)).toBe(2);
  });

  it('lists, counts and tails the calls of no recognised operation under `(unknown)`', async () => {
    const from = new Date().toISOString();
    const nope = await t.inject({ method: 'GET', url: '/AuthCodeSending.asmx/NoSuchThing?x=needle' });
    expect(nope.statusCode).toBeGreaterThanOrEqual(400);
    await t.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode?code=1234&phone=%2B447911123456' });

    const unknown = encodeURIComponent('(unknown)');
    const list = await get<CallList>(`/api/calls?operation=${unknown}&from=${from}`);
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]).toMatchObject({ operation: null, group: 'AuthCodeSending' });
    // Free text runs elsewhere (the search worker, the chunked PostgreSQL search): the same meaning.
    const found = await get<CallList>(`/api/calls?operation=${unknown}&from=${from}&q=needle`);
    expect(found.body.items.map((c) => c.id)).toEqual([list.body.items[0]?.id]);
    const none = await get<CallList>(`/api/calls?operation=${unknown}&from=${from}&q=447911123456`);
    expect(none.body.items).toEqual([]);

    expect((await get<CallCount>(`/api/calls/count?operation=${unknown}&from=${from}`)).body).toEqual({
      count: 1,
      more: false,
    });
    expect((await get<CallCount>(`/api/calls/count?from=${from}`)).body).toEqual({ count: 2, more: false });
    // The live tail's filter means the same.
    const row = callRow({ operation: null });
    expect(matchesCall({ operation: '(unknown)' }, { ...row, id: 1 } as CallRow)).toBe(true);
    expect(matchesCall({ operation: '(unknown)' }, { ...callRow(), id: 2 } as CallRow)).toBe(false);
    expect(matchesCall({ operation: 'AuthCode' }, { ...row, id: 3 } as CallRow)).toBe(false);

    const text = await get<{ detail: string }>('/api/calls/count?q=needle');
    expect(text.status).toBe(400);
    expect(text.body.detail).toBe('Calls found by free text are not counted.');
  });
});
