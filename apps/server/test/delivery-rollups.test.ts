/**
 * The Dashboard's hourly roll-ups of the deliveries (src/stats/delivery-rollups.ts) must say what
 * the deliveries say, whatever has become of them since: an hour is rolled up only once none of
 * its deliveries is on its way, and a dead one resent by staff takes its hour out of the roll-ups
 * until it has settled again. On each database; an hour is rolled up once, however many try.
 */
import { DELIVERY_STATES, type DeliveryState, type Stats } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOUR_MS, ROLLUP_GRACE_MS } from '../src/stats/call-rollups.js';
import { callStats } from '../src/stats/call-stats.js';
import type { DeliveryStatus } from '../src/store/index.js';
import { CONSOLE_HEADERS, type TestApp, waitUntil } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

const DAY = 24 * HOUR_MS;
/** Whole UTC days, all well before the grace. */
const T0 = Math.floor((Date.now() - 3 * DAY) / DAY) * DAY - DAY;
const LATER = Date.now() + 30 * DAY;
/** The delivery still on its way: pending, its next try far off. */
const ON_ITS_WAY_AT = T0 + 30 * HOUR_MS + 17 * 60_000;
/** The dead push that staff resend. */
const RESENT_AT = T0 + 2 * HOUR_MS + 5 * 60_000;
const STATUSES: DeliveryStatus[] = ['sent', 'sent', 'sent', 'dead', 'expired'];

const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

describe.each(DIALECTS)('the Dashboard’s hourly roll-ups of the deliveries (%s)', (dialect) => {
  let t: TestApp;
  let onItsWay: number;
  let resent: number;
  let total = 0;

  async function insert(at: number, status: DeliveryStatus, i: number, kind: 'sms' | 'push' = 'push') {
    const row = await t.app.store.db
      .insertInto('deliveries')
      .values({
        call_id: 1,
        kind,
        provider: i % 4 === 0 ? 'log' : kind === 'sms' ? 'twilio' : 'fcm',
        recipient: kind === 'sms' ? '+447911123456' : 'school-1',
        payload:
          kind === 'sms'
            ? JSON.stringify({ maskedText: 'Your verification code is ***' })
            : JSON.stringify({ title: 'T', body: 'B', data: {} }),
        status,
        attempts: status === 'pending' ? 1 : 1 + (i % 3),
        next_attempt_at: status === 'pending' ? LATER : at,
        lease_until: null,
        expires_at: null,
        idempotency_key: `rollup-${i}`,
        provider_id: null,
        provider_status: null,
        last_error: null,
        created_at: at,
        updated_at: at,
        sent_at: status === 'sent' ? at : null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    total++;
    return row.id;
  }

  /** The deliveries of the Dashboard for a period, from the roll-ups up to their watermark, and from the table alone. */
  async function both(from: number, to: number, bucketMs: number) {
    const { store } = t.app;
    const range = { from, to, bucketMs };
    const raw = await callStats(store.db, store.dialect, range, { deliveriesRolledUntil: null });
    const rolled = await callStats(store.db, store.dialect, range, {
      deliveriesRolledUntil: await t.app.deliveryRollups.rolledUntil(),
    });
    return { raw: raw.deliveries, rolled: rolled.deliveries };
  }
  const periods: [string, number, number, number][] = [
    ['whole hours, by hour', T0, T0 + 40 * HOUR_MS, HOUR_MS],
    ['edges inside hours, by hour', T0 + 17 * 60_000, T0 + 40 * HOUR_MS + 123_456, HOUR_MS],
    ['two days, by day', T0, T0 + 2 * DAY, DAY],
    ['edges inside hours, by day', T0 + 5 * 60_000, T0 + 2 * DAY - 7 * 60_000, DAY],
  ];
  /** Every delivery by state, each row of the table read (`sent` without the `log` provider's). */
  async function countedOneByOne(): Promise<Record<DeliveryState, number>> {
    const rows = await t.app.store.db.selectFrom('deliveries').select(['status', 'provider']).execute();
    const out = Object.fromEntries(DELIVERY_STATES.map((s) => [s, 0])) as Record<DeliveryState, number>;
    for (const r of rows) out[r.status === 'sent' && r.provider === 'log' ? 'logged' : r.status]++;
    return out;
  }
  /** The outbox's counts as the console and /metrics have them: from the roll-ups and what came since. */
  async function countsShown(): Promise<Record<DeliveryState, number>> {
    const res = await t.inject({ method: 'GET', url: '/api/deliveries?limit=1', headers: CONSOLE_HEADERS });
    expect(res.statusCode).toBe(200);
    return res.json().counts;
  }
  const sameEverywhere = async () => {
    for (const [, from, to, bucketMs] of periods) {
      const { raw, rolled } = await both(from, to, bucketMs);
      expect(raw.length).toBeGreaterThan(0);
      expect(rolled).toEqual(raw);
    }
    expect(await countsShown()).toEqual(await countedOneByOne());
  };

  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    // A call for the deliveries to belong to (SQLite keeps the foreign key).
    await t.app.recorder.record({
      at: T0,
      group_name: 'Notification',
      operation: 'SendNotificationType',
      binding: 'soap11',
      caller_ip: '203.0.113.1',
      outcome: 'ok',
      status: 200,
      duration_ms: 1,
      request: '',
      request_bytes: 0,
      response: '',
      response_bytes: 0,
    });
    for (let i = 0; i < 300; i++) {
      const status = STATUSES[i % STATUSES.length] as DeliveryStatus;
      await insert(
        T0 + Math.floor((i * 2 * DAY) / 300) + (i % 11) * 1000,
        status,
        i,
        status === 'expired' ? 'sms' : 'push',
      );
    }
    onItsWay = await insert(ON_ITS_WAY_AT, 'pending', 1000);
    // To the log provider (every 4th), which is the one these tests have: it sends it at once.
    resent = await insert(RESENT_AT, 'dead', 1004);
  });
  afterAll(() => t?.close());

  it('stop at the hour of a delivery on its way, made once however many instances roll', async () => {
    const rollups = t.app.deliveryRollups;
    expect(await rollups.rolledUntil()).toBeNull();
    // Nothing rolled up yet: every delivery is counted from the table.
    expect(await countsShown()).toEqual(await countedOneByOne());
    const [a, b] = await Promise.all([rollups.rollUp(Date.now()), rollups.rollUp(Date.now())]);
    expect(await rollups.rolledUntil()).toBe(hourOf(ON_ITS_WAY_AT));
    expect(a + b).toBe((hourOf(ON_ITS_WAY_AT) - T0) / HOUR_MS);
    expect(await rollups.rollUp(Date.now())).toBe(0);
    await sameEverywhere();
  });

  it('go on once it has settled, to the hours that ended', async () => {
    await t.app.store.db
      .updateTable('deliveries')
      .set({ status: 'sent', sent_at: ON_ITS_WAY_AT + 1000 })
      .where('id', '=', onItsWay)
      .execute();
    await t.app.deliveryRollups.rollUp(Date.now());
    expect(await t.app.deliveryRollups.rolledUntil()).toBe(hourOf(Date.now() - ROLLUP_GRACE_MS));
    const rolled = await t.app.store.db
      .selectFrom('delivery_hours')
      .select((eb) => eb.fn.sum<number>('count').as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(rolled.n)).toBe(total);
    await sameEverywhere();
  });

  it('count a dead delivery resent by staff as what became of it, not as dead', async () => {
    const { raw: before } = await both(T0, T0 + DAY, DAY);
    const res = await t.inject({
      method: 'POST',
      url: `/api/deliveries/${resent}/retry`,
      headers: CONSOLE_HEADERS,
    });
    expect(res.statusCode, res.body).toBe(200);
    // Its hour and every later one are out of the roll-ups at once.
    expect(await t.app.deliveryRollups.rolledUntil()).toBe(hourOf(RESENT_AT));
    const kept = await t.app.store.db
      .selectFrom('delivery_hours')
      .select((eb) => eb.fn.max<number>('hour').as('last'))
      .executeTakeFirstOrThrow();
    expect(Number(kept.last)).toBe(hourOf(RESENT_AT) - HOUR_MS);
    // The log provider sends it; then the hours are rolled up again.
    await waitUntil(
      async () =>
        (
          await t.app.store.db
            .selectFrom('deliveries')
            .select('status')
            .where('id', '=', resent)
            .executeTakeFirst()
        )?.status === 'sent',
      { what: 'the resent push sent', timeoutMs: 10_000, intervalMs: 20 },
    );
    await sameEverywhere();
    await t.app.deliveryRollups.rollUp(Date.now());
    expect(await t.app.deliveryRollups.rolledUntil()).toBe(hourOf(Date.now() - ROLLUP_GRACE_MS));
    const { raw: after, rolled } = await both(T0, T0 + DAY, DAY);
    expect(rolled).toEqual(after);
    expect(after[0]?.dead).toBe((before[0]?.dead ?? 0) - 1);
    expect((after[0]?.sent ?? 0) + (after[0]?.logged ?? 0)).toBe(
      (before[0]?.sent ?? 0) + (before[0]?.logged ?? 0) + 1,
    );
    await sameEverywhere();
  });

  it('count the deliveries by state, one copied into an hour rolled up and on its way too', async () => {
    const watermark = (await t.app.deliveryRollups.rolledUntil()) ?? 0;
    expect(watermark).toBeGreaterThan(T0 + 2 * DAY);
    // Copied in (as data moved from another database would be): pending, in a rolled-up hour.
    const copied = await insert(T0 + 5 * HOUR_MS + 1234, 'pending', 2000);
    const counts = await countsShown();
    expect(counts).toEqual(await countedOneByOne());
    expect(counts.pending).toBe(1);
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(total);
    // The next step moves the watermark back to its hour; the counts stay what the table says.
    await t.app.deliveryRollups.rollUp(Date.now());
    expect(await t.app.deliveryRollups.rolledUntil()).toBe(hourOf(T0 + 5 * HOUR_MS));
    await sameEverywhere();
    await t.app.store.db.updateTable('deliveries').set({ status: 'sent' }).where('id', '=', copied).execute();
    await t.app.deliveryRollups.rollUp(Date.now());
    expect(await t.app.deliveryRollups.rolledUntil()).toBeGreaterThanOrEqual(watermark);
    await sameEverywhere();
  });

  it('answer GET /api/stats, and retention removes the hours it removes the deliveries of', async () => {
    const res = await t.inject({
      method: 'GET',
      url: `/api/stats?from=${new Date(T0).toISOString()}&to=${new Date(T0 + 2 * DAY).toISOString()}&bucket=day`,
      headers: CONSOLE_HEADERS,
    });
    expect(res.statusCode).toBe(200);
    const { deliveries } = res.json() as Stats;
    const counted = deliveries.reduce((n, d) => n + d.sent + d.logged + d.dead + d.expired + d.waiting, 0);
    expect(counted).toBe(total);

    // Retention removed the first day's deliveries (on PostgreSQL a partition whole, while its
    // `before` is already hours later): the hours of the deliveries still kept keep their roll-ups.
    const { db } = t.app.store;
    const firstDay = db
      .selectFrom('deliveries')
      .select('id')
      .where('created_at', '<', T0 + DAY);
    await db.deleteFrom('delivery_attempts').where('delivery_id', 'in', firstDay).execute();
    await db
      .deleteFrom('deliveries')
      .where('created_at', '<', T0 + DAY)
      .execute();
    await t.app.deliveryRollups.deleteOlderThan(T0 + DAY + 6 * HOUR_MS);
    const left = await t.app.store.db
      .selectFrom('delivery_hours')
      .select((eb) => eb.fn.min<number>('hour').as('first'))
      .executeTakeFirstOrThrow();
    expect(Number(left.first)).toBe(T0 + DAY);
    expect(await countsShown()).toEqual(await countedOneByOne());
  });
});
