/**
 * The Dashboard's roll-ups (src/stats/call-rollups.ts) must say exactly what the calls say: for
 * any period — whole hours or not, by hour or by day — the statistics read from the roll-ups up
 * to their watermark and from the calls after it equal those read from the calls alone. On each
 * database; and an hour is rolled up once, however many instances try.
 */
import type { Stats } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOUR_MS, ROLLUP_GRACE_MS } from '../src/stats/call-rollups.js';
import { callStats } from '../src/stats/call-stats.js';
import type { NewCall } from '../src/store/index.js';
import { CONSOLE_HEADERS, type TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

const DAY = 24 * HOUR_MS;
/** Three days ago, at the start of a UTC day: whole days of calls, all well before the grace. */
const T0 = Math.floor((Date.now() - 3 * DAY) / DAY) * DAY - DAY;
const OPERATIONS = ['AuthCode', 'SendMarkNotes', 'pushNoti', null] as const;
const ERRORS = ['Missing parameter: phone.', "Invalid phone: '12' is not a valid phone number.", null];

/** Deterministic calls over two days: every operation, outcome, a spread of durations, errors. */
function calls(): NewCall[] {
  const out: NewCall[] = [];
  for (let i = 0; i < 600; i++) {
    const outcome = i % 7 === 0 ? 'client-error' : i % 29 === 0 ? 'server-error' : 'ok';
    out.push({
      at: T0 + Math.floor((i * 2 * DAY) / 600) + (i % 13) * 1000,
      group_name: 'AuthCodeSending',
      operation: OPERATIONS[i % OPERATIONS.length] ?? null,
      binding: 'soap11',
      caller_ip: '203.0.113.1',
      user_agent: null,
      params: null,
      outcome,
      status: outcome === 'ok' ? 200 : outcome === 'server-error' ? 500 : 400,
      error: outcome === 'ok' ? null : (ERRORS[i % ERRORS.length] ?? null),
      duration_ms: 0.5 + ((i * 37) % 900) / 3,
      request: '',
      request_bytes: 0,
      response: '',
      response_bytes: 0,
    } as NewCall);
  }
  return out;
}

describe.each(DIALECTS)('the Dashboard’s hourly roll-ups (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    for (const call of calls()) await t.app.recorder.record(call);
  });
  afterAll(() => t.close());

  const periods: [string, number, number, number][] = [
    ['whole hours, by hour', T0, T0 + 30 * HOUR_MS, HOUR_MS],
    ['edges inside hours, by hour', T0 + 17 * 60_000, T0 + 40 * HOUR_MS + 123_456, HOUR_MS],
    ['two days, by day', T0, T0 + 2 * DAY, DAY],
    ['edges inside hours, by day', T0 + 5 * 60_000, T0 + 2 * DAY - 7 * 60_000, DAY],
  ];

  it('are made once, a step at a time, up to the hours that ended', async () => {
    const { rollups } = t.app;
    expect(await rollups.rolledUntil()).toBeNull();
    // Two instances at once: the watermark moves from where each found it, so no hour twice.
    const [a, b] = await Promise.all([rollups.rollUp(Date.now()), rollups.rollUp(Date.now())]);
    const until = await rollups.rolledUntil();
    expect(until).toBe(Math.floor((Date.now() - ROLLUP_GRACE_MS) / HOUR_MS) * HOUR_MS);
    expect(a + b).toBe(((until as number) - T0) / HOUR_MS);
    const rolled = await t.app.store.db
      .selectFrom('call_hours')
      .select((eb) => eb.fn.sum<number>('count').as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(rolled.n)).toBe(600);
    // Nothing more to do.
    expect(await rollups.rollUp(Date.now())).toBe(0);
  });

  it.each(periods)('give the same statistics as the calls: %s', async (_name, from, to, bucketMs) => {
    const { store } = t.app;
    const range = { from, to, bucketMs };
    const fromCalls = await callStats(store.db, store.dialect, range, { rolledUntil: null });
    const fromRollups = await callStats(store.db, store.dialect, range, {
      rolledUntil: await t.app.rollups.rolledUntil(),
    });
    expect(fromCalls.rows.reduce((n, r) => n + r.count, 0)).toBeGreaterThan(0);
    expect(fromRollups).toEqual(fromCalls);
    // Only part rolled up: the rest from the calls, the same again.
    const partly = await callStats(store.db, store.dialect, range, { rolledUntil: T0 + 20 * HOUR_MS });
    expect(partly).toEqual(fromCalls);
  });

  it('answer GET /api/stats, and retention removes the hours it removes the calls of', async () => {
    const res = await t.inject({
      method: 'GET',
      url: `/api/stats?from=${new Date(T0).toISOString()}&to=${new Date(T0 + 2 * DAY).toISOString()}&bucket=day`,
      headers: CONSOLE_HEADERS,
    });
    expect(res.statusCode).toBe(200);
    const stats = res.json() as Stats;
    expect(stats.rows.reduce((n, r) => n + r.count, 0)).toBe(600);

    await t.app.rollups.deleteOlderThan(T0 + DAY);
    const left = await t.app.store.db
      .selectFrom('call_hours')
      .select((eb) => eb.fn.min<number>('hour').as('first'))
      .executeTakeFirstOrThrow();
    expect(Number(left.first)).toBe(T0 + DAY);
  });
});
