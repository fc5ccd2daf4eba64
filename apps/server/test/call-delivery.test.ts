/**
 * History says what became of the SMS a call queued, beside the call's own outcome: a parent's
 * AuthCode answered OK whose SMS went dead reads "Dead" in the list, and "delivery failed" finds it
 * (the list, the free-text search, the count and the export alike). A real HTTP gateway sends,
 * refuses for good (400) or for now (503), or hangs.
 */
import type { CallList, CallSummary } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchesCall } from '../src/history/index.js';
import { registerSchool, type TestApp, waitUntil } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';
import { gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

const PHONES = {
  sent: '+447911100001',
  dead: '+447911100002',
  retrying: '+447911100003',
  sending: '+447911100004',
} as const;

describe.each(DIALECTS)('the delivery state of each call in History, on %s', (dialect) => {
  let t: TestApp;
  let gateway: SmsGateway;
  const ids = {} as Record<keyof typeof PHONES | 'book', number>;

  const list = async (query = ''): Promise<CallSummary[]> => {
    const res = await t.inject({ method: 'GET', url: `/api/calls${query}` });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as CallList).items;
  };
  const stateOf = (items: CallSummary[], id: number) => items.find((c) => c.id === id)?.delivery;

  /** Sends a code to `phone` and answers its call's id once its delivery reached `status`. */
  async function authCode(phone: string, status: string): Promise<number> {
    const res = await fetchCode(phone);
    expect(res.statusCode, res.body).toBe(200);
    const [call] = await t.app.history.list({ limit: 1 });
    const id = call?.id as number;
    await waitUntil(
      async () => (await t.app.outbox.deliveries.search({ callId: id }, { limit: 1 }))[0]?.status === status,
      { what: `the SMS to ${phone} ${status}`, timeoutMs: 10_000, intervalMs: 20 },
    );
    return id;
  }
  const fetchCode = (phone: string) =>
    t.app.inject({
      method: 'GET',
      url: `/AuthCodeSending.asmx/AuthCode?code=4821&phone=${encodeURIComponent(phone)}`,
    });

  beforeAll(async () => {
    gateway = await startSmsGateway();
    // Retries an hour away: a refused-for-now SMS stays `pending` after its first attempt.
    t = await startTestAppOn(dialect, {
      ...gatewayEnv(gateway),
      DISPATCH_POLL_MS: '20',
      DELIVERY_RETRY_BASE_MS: '3600000',
      DELIVERY_RETRY_MAX_MS: '3600000',
      PROVIDER_TIMEOUT_MS: '30000',
    });
    await registerSchool(t.app);
    ids.sent = await authCode(PHONES.sent, 'sent');
    gateway.refusing = 400;
    ids.dead = await authCode(PHONES.dead, 'dead');
    gateway.refusing = 503;
    ids.retrying = await authCode(PHONES.retrying, 'pending');
    gateway.refusing = undefined;
    gateway.hanging = true;
    ids.sending = await authCode(PHONES.sending, 'sending');
    const book = await t.app.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=S-9&classId=7B',
    });
    expect(book.statusCode).toBe(404); // no book uploaded: answered, and nothing queued
    const [bookCall] = await t.app.history.list({ limit: 1 });
    expect(bookCall?.operation).toBe('GetBookPdfByTerm');
    ids.book = bookCall?.id as number;
  }, 60_000);

  afterAll(async () => {
    // The gateway first: it ends the hanging attempt, which the server's close would wait for.
    await gateway?.close();
    await t?.close();
  });

  it('shows each call its delivery: sent, dead, retrying, being sent, or none queued', async () => {
    const items = await list();
    expect(stateOf(items, ids.sent)).toEqual({ state: 'sent', count: 1 });
    expect(stateOf(items, ids.dead)).toEqual({ state: 'dead', count: 1 });
    expect(stateOf(items, ids.retrying)).toEqual({ state: 'retrying', count: 1 });
    expect(stateOf(items, ids.sending)).toEqual({ state: 'sending', count: 1 });
    expect(stateOf(items, ids.book)).toBeNull();
    // The call itself was answered OK: the delivery is what tells the two apart.
    expect(items.find((c) => c.id === ids.dead)?.outcome).toBe('ok');
  });

  it('says it on the call too', async () => {
    const dead = await t.inject({ method: 'GET', url: `/api/calls/${ids.dead}` });
    expect(dead.json()).toMatchObject({ outcome: 'ok', delivery: { state: 'dead', count: 1 } });
    const book = await t.inject({ method: 'GET', url: `/api/calls/${ids.book}` });
    expect(book.json()).toMatchObject({ delivery: null });
  });

  it('finds the calls whose delivery failed, in the list, the search, the count and the export', async () => {
    expect((await list('?delivery=failed')).map((c) => c.id)).toEqual([ids.dead]);
    expect((await list('?delivery=failed&operation=AuthCode')).map((c) => c.id)).toEqual([ids.dead]);
    // Free text runs in the search worker (SQLite) or the chunked search (PostgreSQL).
    expect((await list(`?delivery=failed&q=${encodeURIComponent('07911 100002')}`)).map((c) => c.id)).toEqual(
      [ids.dead],
    );
    expect(await list(`?delivery=failed&q=${encodeURIComponent(PHONES.sent)}`)).toEqual([]);

    const count = await t.inject({ method: 'GET', url: '/api/calls/count?delivery=failed' });
    expect(count.json()).toEqual({ count: 1, more: false });

    const csv = await t.inject({ method: 'GET', url: '/api/calls/export?format=csv&delivery=failed' });
    expect(csv.statusCode).toBe(200);
    const lines = csv.body.trim().split('\r\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(new RegExp(`^${ids.dead},`));
  });

  it('refuses a delivery filter it does not know, in the API’s terms', async () => {
    const res = await t.inject({ method: 'GET', url: '/api/calls?delivery=lost' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
  });

  it('shows their delivery on a page of calls weeks apart (each stretch of time looked up apart)', async () => {
    // The dead one's call and SMS moved 40 days back: the page spans them all.
    const back = 40 * 86_400_000;
    const { db } = t.app.store;
    await db
      .updateTable('calls')
      .set((eb) => ({ at: eb('at', '-', back) }))
      .where('id', '=', ids.dead)
      .execute();
    await db
      .updateTable('deliveries')
      .set((eb) => ({ created_at: eb('created_at', '-', back) }))
      .where('call_id', '=', ids.dead)
      .execute();
    const items = await list('?operation=AuthCode');
    expect(items.map((c) => c.id)).toEqual([ids.sending, ids.retrying, ids.sent, ids.dead]);
    expect(stateOf(items, ids.dead)).toEqual({ state: 'dead', count: 1 });
    expect(stateOf(items, ids.sent)).toEqual({ state: 'sent', count: 1 });
    expect(stateOf(items, ids.sending)).toEqual({ state: 'sending', count: 1 });
  });

  it('passes no call just recorded on the live tail under "delivery failed": none has failed yet', async () => {
    const [row] = await t.app.history.list({ limit: 1 });
    expect(row).toBeDefined();
    expect(matchesCall({}, row as NonNullable<typeof row>)).toBe(true);
    expect(matchesCall({ delivery: 'failed' }, row as NonNullable<typeof row>)).toBe(false);
  });
});
