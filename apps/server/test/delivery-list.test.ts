/**
 * GET /api/deliveries as the Deliveries page uses it: the `log` provider's deliveries
 * told apart from sent ones, search by recipient, time range, provider, paging; and the number of
 * deliveries a console send queued. On every database the store supports.
 */
import type { DeliveryList, OperationResult, Problem } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryStatus } from '../src/store/index.js';
import type { TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

const T0 = Date.UTC(2026, 10, 2, 9, 0, 0);
const HOUR = 3_600_000;
/** Far enough ahead that the test app's dispatcher never takes the pending one. */
const LATER = Date.UTC(2099, 0, 1);

interface Row {
  kind: 'sms' | 'push';
  provider: string;
  recipient: string;
  status: DeliveryStatus;
  at: number;
}

/** Seven deliveries, oldest first; the last two were queued in the same millisecond. */
const ROWS: Row[] = [
  { kind: 'sms', provider: 'log', recipient: '+447911123456', status: 'sent', at: T0 },
  { kind: 'sms', provider: 'twilio', recipient: '+447911999000', status: 'sent', at: T0 + HOUR },
  {
    kind: 'push',
    provider: 'log',
    recipient: 'school-Northfield-class-7B',
    status: 'sent',
    at: T0 + 2 * HOUR,
  },
  { kind: 'push', provider: 'fcm', recipient: 'school-northfield', status: 'dead', at: T0 + 3 * HOUR },
  { kind: 'sms', provider: 'http', recipient: '+33612345678', status: 'pending', at: T0 + 4 * HOUR },
  { kind: 'sms', provider: 'log', recipient: '+447911123456', status: 'expired', at: T0 + 5 * HOUR },
  { kind: 'push', provider: 'webhook', recipient: 'school-100%_real', status: 'sent', at: T0 + 5 * HOUR },
];

describe.each(DIALECTS)('the deliveries list (%s)', (dialect) => {
  let t: TestApp;
  /** The ids of ROWS, in ROWS' order. */
  let ids: number[] = [];

  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    const callId = await t.app.recorder.record({
      at: T0,
      group_name: 'AuthCodeSending',
      operation: 'AuthCode',
      binding: 'soap11',
      caller_ip: '203.0.113.1',
      user_agent: null,
      params: null,
      outcome: 'ok',
      status: 200,
      error: null,
      duration_ms: 1,
      request: '',
      request_bytes: 0,
      response: '',
      response_bytes: 0,
      note: null,
      request_id: null,
    });
    ids = [];
    for (const [i, row] of ROWS.entries()) {
      const inserted = await t.app.store.db
        .insertInto('deliveries')
        .values({
          call_id: callId,
          kind: row.kind,
          provider: row.provider,
          recipient: row.recipient,
          payload:
            row.kind === 'sms'
              ? JSON.stringify({ maskedText: 'Your verification code is ***' })
              : JSON.stringify({ title: 'T', body: 'B', data: {} }),
          status: row.status,
          attempts: row.status === 'pending' ? 1 : 2,
          next_attempt_at: row.status === 'pending' ? LATER : row.at,
          lease_until: null,
          expires_at: null,
          idempotency_key: `list-${i}`,
          provider_id: null,
          provider_status: null,
          last_error: null,
          created_at: row.at,
          updated_at: row.at,
          sent_at: row.status === 'sent' ? row.at : null,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      ids.push(inserted.id);
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  async function list(query: string): Promise<DeliveryList> {
    const res = await t.inject({ method: 'GET', url: `/api/deliveries?${query}` });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as DeliveryList;
  }
  /** The ROWS (1-based positions) a query lists, in the order listed. */
  const listed = async (query: string) =>
    (await list(query)).items.map((d) => ids.indexOf(d.id) + 1).filter((n) => n > 0);

  it('shows the log provider’s deliveries as logged, counted apart from the sent ones', async () => {
    const all = await list('');
    expect(all.counts).toEqual({ pending: 1, sending: 0, sent: 2, logged: 2, dead: 1, expired: 1 });
    const statusOf = (n: number) => all.items.find((d) => d.id === ids[n - 1])?.status;
    expect([1, 2, 3, 4, 5, 6, 7].map(statusOf)).toEqual([
      'logged',
      'sent',
      'logged',
      'dead',
      'pending',
      'expired',
      'sent',
    ]);
    expect(await listed('status=logged')).toEqual([3, 1]);
    expect(await listed('status=sent')).toEqual([7, 2]);
    // A log delivery that never went out keeps its own status.
    expect(await listed('provider=log')).toEqual([6, 3, 1]);
    expect(await listed('status=logged&provider=twilio')).toEqual([]);
    const one = await t.inject({ method: 'GET', url: `/api/deliveries/${ids[0]}` });
    expect(one.json()).toMatchObject({ status: 'logged', provider: 'log' });
  });

  it('lists newest first by the time queued, the same millisecond by id', async () => {
    expect(await listed('')).toEqual([7, 6, 5, 4, 3, 2, 1]);
  });

  it('answers every page size alike, past those PostgreSQL keeps a statement for', async () => {
    const newest = [7, 6, 5, 4, 3, 2, 1];
    for (const limit of [1, 2, 3, 4, 5, 6, 3, 1]) {
      const page = await list(`limit=${limit}`);
      expect(page.items.map((d) => ids.indexOf(d.id) + 1)).toEqual(newest.slice(0, limit));
      expect(page.nextCursor === null).toBe(limit >= newest.length);
    }
  });

  it('finds part of a recipient in any case, a phone as people type it, and % literally', async () => {
    expect(await listed('recipient=NORTHFIELD')).toEqual([4, 3]);
    expect(await listed('recipient=class-7b')).toEqual([3]);
    expect(await listed(`recipient=${encodeURIComponent('07911 123 456')}`)).toEqual([6, 1]);
    expect(await listed(`recipient=${encodeURIComponent('+44 (0)7911-999')}`)).toEqual([2]);
    expect(await listed(`recipient=${encodeURIComponent('0033 6 12')}`)).toEqual([5]);
    expect(await listed(`recipient=${encodeURIComponent('+4479111')}`)).toEqual([6, 1]);
    expect(await listed('recipient=%25')).toEqual([7]);
    expect(await listed('recipient=_')).toEqual([7]);
    expect(await listed('recipient=%20%20')).toEqual([7, 6, 5, 4, 3, 2, 1]);
  });

  it('filters by the time queued (to exclusive), kind and provider, all together', async () => {
    const iso = (ms: number) => new Date(ms).toISOString();
    expect(await listed(`from=${iso(T0 + HOUR)}&to=${iso(T0 + 4 * HOUR)}`)).toEqual([4, 3, 2]);
    expect(await listed(`from=${iso(T0 + 5 * HOUR)}`)).toEqual([7, 6]);
    expect(await listed(`to=${iso(T0 + HOUR)}`)).toEqual([1]);
    expect(await listed('kind=push&status=sent')).toEqual([7]);
    expect(await listed(`kind=sms&provider=log&to=${iso(T0 + 5 * HOUR)}`)).toEqual([1]);
    expect(await listed('provider=fcm&recipient=north')).toEqual([4]);
  });

  it('pages with its cursor without skipping or repeating, and refuses a cursor it did not give', async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page: DeliveryList = await list(`limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((d) => ids.indexOf(d.id) + 1));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([7, 6, 5, 4, 3, 2, 1]);

    for (const bad of ['12', 'not-a-cursor', Buffer.from('1.x').toString('base64url')]) {
      const res = await t.inject({ method: 'GET', url: `/api/deliveries?cursor=${bad}` });
      expect(res.statusCode).toBe(400);
      expect((res.json() as Problem).errors).toEqual({ cursor: 'is invalid' });
    }
    const provider = await t.inject({ method: 'GET', url: '/api/deliveries?provider=carrier-pigeon' });
    expect(provider.statusCode).toBe(400);
  });

  it('answers how many deliveries a console send queued, and they end logged with the log provider', async () => {
    const sms = await t.inject({
      method: 'POST',
      url: '/api/operations/AuthCode',
      payload: { code: '4821', phone: '+447911123456' },
    });
    const result = sms.json() as OperationResult;
    expect(result).toMatchObject({ outcome: 'ok', queued: 1 });
    const pushNoti = await t.inject({ method: 'POST', url: '/api/operations/pushNoti' });
    expect(pushNoti.json()).toMatchObject({ outcome: 'ok', queued: 0 });

    const deadline = Date.now() + 10_000;
    let items: DeliveryList['items'] = [];
    do {
      items = (await list(`callId=${result.id}`)).items;
      if (items[0]?.status === 'logged') break;
      await new Promise((r) => setTimeout(r, 25));
    } while (Date.now() < deadline);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ status: 'logged', provider: 'log', recipient: '+447911123456' });
  });
});
