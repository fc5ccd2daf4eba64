/**
 * The hedge (docs/outbox.md#the-hedge): a code whose attempt on the primary SMS gateway has not
 * answered within SMS_HEDGE_AFTER goes to the fallback too. Two fake gateways that are real HTTP
 * servers; on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { registerSchool, type TestApp, waitUntil } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';
import { startFakeServer } from './providers/fake-server.js';
import { testPhone } from './server-process.js';
import { fallbackGatewayEnv, gatewayEnv, startSmsGateway } from './sms-gateway.js';

const HEDGE_MS = 1000;
/** What a parent may wait, from the call's answer to the code at a gateway, while the primary hangs. */
const ON_TIME_MS = 4000;

interface AttemptView {
  readonly provider: string;
  readonly outcome: string | null;
  readonly error: string | null;
}
interface DeliveryView {
  readonly id: number;
  readonly status: string;
  readonly provider: string;
  readonly attempts: number;
  readonly unsureProvider: string | null;
  readonly sentAt: string | null;
  readonly attemptLog: AttemptView[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.each(DIALECTS)('the hedge on %s', (dialect) => {
  async function start(env: Record<string, string> = {}) {
    const primary = await startSmsGateway(5);
    const fallback = await startSmsGateway(5);
    cleanups.push(
      () => primary.close(),
      () => fallback.close(),
    );
    const t = await startTestAppOn(dialect, {
      ...gatewayEnv(primary),
      ...fallbackGatewayEnv(fallback),
      DISPATCH_POLL_MS: '100',
      PROVIDER_TIMEOUT_MS: '3000',
      SMS_HEDGE_AFTER: `${HEDGE_MS}ms`,
      ...env,
    });
    cleanups.push(() => t.close());
    return { t, primary, fallback };
  }

  /** An AuthCode over HTTP GET; answers when it was accepted (epoch ms). */
  async function sendCode(t: TestApp, phone: string): Promise<number> {
    const res = await t.app.inject({
      method: 'GET',
      url: `/AuthCodeSending.asmx/AuthCode?code=482915&phone=${encodeURIComponent(phone)}`,
    });
    expect(res.statusCode).toBe(200);
    return Date.now();
  }

  /** The phone's delivery as the console's delivery page reads it. */
  async function deliveryTo(t: TestApp, phone: string): Promise<DeliveryView> {
    const [row] = await t.app.outbox.deliveries.search({ recipient: phone }, { limit: 1 });
    const res = await t.inject({ method: 'GET', url: `/api/deliveries/${row?.id ?? 0}` });
    expect(res.statusCode).toBe(200);
    return res.json();
  }

  const attemptsOf = (d: DeliveryView) => d.attemptLog.map((a) => [a.provider, a.outcome]);
  const allEnded = (d: DeliveryView) => d.attemptLog.every((a) => a.outcome !== null);

  const twiceCount = async (t: TestApp, provider: string, unsure: string) => {
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const line = metrics
      .split('\n')
      .find((l) =>
        l.startsWith(
          `school_deliveries_sent_after_unsure_total{kind="sms",provider="${provider}",unsure="${unsure}"}`,
        ),
      );
    return Number(line?.split(' ').at(-1) ?? 0);
  };

  it('sends a code the hanging primary has not answered to the fallback within seconds, shown as may have arrived twice; the primary timing out later changes nothing', async () => {
    const { t, primary, fallback } = await start();
    primary.hanging = true;
    const phones = [testPhone(2000), testPhone(2001), testPhone(2002)];
    const acceptedAt = new Map<string, number>();
    for (const phone of phones) acceptedAt.set(phone, await sendCode(t, phone));
    await waitUntil(() => fallback.sent.length === phones.length, {
      timeoutMs: ON_TIME_MS + 2000,
      what: 'the codes at the fallback',
    });
    for (const phone of phones) {
      const waited = (fallback.sentAt.get(phone) as number) - (acceptedAt.get(phone) as number);
      // Sent on the hedge (armed as the call's commit claimed it, a moment before its answer).
      expect(waited, phone).toBeGreaterThanOrEqual(HEDGE_MS - 300);
      expect(waited, phone).toBeLessThan(ON_TIME_MS);
    }
    // With the key the primary was given, once each.
    expect([...fallback.requestsByKey.keys()].sort()).toEqual([...primary.requestsByKey.keys()].sort());
    expect([...fallback.requestsByKey.values(), ...primary.requestsByKey.values()]).toEqual(
      Array(2 * phones.length).fill(1),
    );
    await waitUntil(async () => (await deliveryTo(t, phones[0] as string)).status === 'sent', {
      what: 'the delivery recorded as sent',
    });
    const sent = await deliveryTo(t, phones[0] as string);
    expect(sent).toMatchObject({ provider: 'http-fallback', unsureProvider: 'http', attempts: 2 });
    expect(sent.sentAt).not.toBeNull();
    await waitUntil(async () => (await twiceCount(t, 'http-fallback', 'http')) === phones.length, {
      what: 'each counted as may have arrived twice',
    });
    // The primary's attempt times out (PROVIDER_TIMEOUT_MS): recorded, and the delivery stays sent.
    for (const phone of phones) {
      await waitUntil(async () => allEnded(await deliveryTo(t, phone)), {
        what: "the primary's timeout recorded",
      });
      const d = await deliveryTo(t, phone);
      expect(attemptsOf(d)).toEqual([
        ['http', 'transient'],
        ['http-fallback', 'sent'],
      ]);
      expect(d).toMatchObject({ status: 'sent', provider: 'http-fallback', unsureProvider: 'http' });
    }
    const timedOut = (await deliveryTo(t, phones[0] as string)).attemptLog[0];
    expect(timedOut?.error).toMatch(/no answer within 3000 ms/);
    // Nothing is sent again: no third request for any code.
    await t.app.outbox.idle();
    expect(primary.requests + fallback.requests).toBe(2 * phones.length);
    expect(await twiceCount(t, 'http-fallback', 'http')).toBe(phones.length);
  });

  it("keeps the delivery sent by the fallback when the primary's answer comes later; both attempts are in its history", async () => {
    const { t, primary, fallback } = await start();
    primary.delayMs = 2500;
    const phone = testPhone(2100);
    await sendCode(t, phone);
    await waitUntil(() => primary.sent.length === 1, { what: "the primary's late answer" });
    expect(fallback.sent).toHaveLength(1);
    await waitUntil(async () => allEnded(await deliveryTo(t, phone)), { what: 'both attempts recorded' });
    const d = await deliveryTo(t, phone);
    expect(attemptsOf(d)).toEqual([
      ['http', 'sent'],
      ['http-fallback', 'sent'],
    ]);
    expect(d).toMatchObject({ status: 'sent', provider: 'http-fallback', unsureProvider: 'http' });
    expect(await twiceCount(t, 'http-fallback', 'http')).toBe(1);
  });

  it('settles the delivery by the primary when it answers first after the hedge, the fallback still under way', async () => {
    const { t, primary, fallback } = await start();
    primary.delayMs = HEDGE_MS + 300;
    fallback.delayMs = 1000;
    const phone = testPhone(2200);
    await sendCode(t, phone);
    await waitUntil(() => fallback.sent.length === 1, { what: "the fallback's answer" });
    await waitUntil(async () => allEnded(await deliveryTo(t, phone)), { what: 'both attempts recorded' });
    const d = await deliveryTo(t, phone);
    expect(attemptsOf(d)).toEqual([
      ['http', 'sent'],
      ['http-fallback', 'sent'],
    ]);
    // Sent by the primary; the fallback had the message too and had not answered yet.
    expect(d).toMatchObject({ status: 'sent', provider: 'http', unsureProvider: 'http-fallback' });
    expect(await twiceCount(t, 'http', 'http-fallback')).toBe(1);
  });

  it('sends a new code straight to the fallback while every slot of the primary is held by attempts past the hedge', async () => {
    const { t, primary, fallback } = await start({ SMS_CONCURRENCY: '2' });
    primary.hanging = true;
    await sendCode(t, testPhone(2250));
    await sendCode(t, testPhone(2251));
    await waitUntil(() => fallback.sent.length === 2, { what: 'the first two hedged' });
    // Both primary slots still wait for its answer (PROVIDER_TIMEOUT_MS): a new code does not.
    const phone = testPhone(2252);
    const acceptedAt = await sendCode(t, phone);
    await waitUntil(() => fallback.sentAt.has(phone), { timeoutMs: ON_TIME_MS, what: 'the third code' });
    expect((fallback.sentAt.get(phone) as number) - acceptedAt).toBeLessThan(HEDGE_MS);
    await waitUntil(async () => (await deliveryTo(t, phone)).status === 'sent', { what: 'it recorded' });
    const d = await deliveryTo(t, phone);
    // Never given to the primary: it cannot arrive twice.
    expect(attemptsOf(d)).toEqual([['http-fallback', 'sent']]);
    expect(d.unsureProvider).toBeNull();
    expect(primary.requestsByKey.size).toBe(2);
  });

  it('never hedges with SMS_HEDGE_AFTER=off: the code waits for the primary, as without a hedge', async () => {
    const { t, primary, fallback } = await start({ SMS_HEDGE_AFTER: 'off' });
    primary.hanging = true;
    const phone = testPhone(2300);
    await sendCode(t, phone);
    await new Promise((r) => setTimeout(r, HEDGE_MS + 1000));
    expect(fallback.requests).toBe(0);
    expect(attemptsOf(await deliveryTo(t, phone))).toEqual([['http', null]]);
    // The primary's timeout: retried later on the primary, not sent to the fallback.
    await waitUntil(async () => allEnded(await deliveryTo(t, phone)), { what: "the primary's timeout" });
    const d = await deliveryTo(t, phone);
    expect(attemptsOf(d)).toEqual([['http', 'transient']]);
    expect(d).toMatchObject({ status: 'pending', provider: 'http', unsureProvider: 'http' });
    expect(fallback.requests).toBe(0);
  });

  it('does not hedge a code past its validity', async () => {
    const { t, primary, fallback } = await start({ AUTHCODE_TTL: '1', SMS_HEDGE_AFTER: '1500ms' });
    primary.hanging = true;
    const phone = testPhone(2400);
    await sendCode(t, phone);
    await new Promise((r) => setTimeout(r, 2500));
    expect(fallback.requests).toBe(0);
    expect((await deliveryTo(t, phone)).attemptLog.map((a) => a.provider)).toEqual(['http']);
  });

  it('does not hedge a push under the same hang: it waits for its provider alone', async () => {
    const hook = await startFakeServer(() => ({ status: 200, delayMs: 60_000 }));
    cleanups.push(() => hook.close());
    const { t, primary, fallback } = await start({
      PUSH_PROVIDER: 'webhook',
      PUSH_WEBHOOK_URL: `${hook.url}/push`,
      PUSH_WEBHOOK_SECRET: 'a-webhook-secret-of-some-length',
    });
    primary.hanging = true;
    await registerSchool(t.app, { topicKey: 'lycee-12' });
    const res = await t.app.inject({
      method: 'GET',
      url: '/NotificationNotes.asmx/SendMarkNotes?id=43&id_class=7B&baseUrlSchool=https://school.example.org',
    });
    expect(res.statusCode).toBe(200);
    await waitUntil(() => hook.requests.length === 1, { what: 'the push at its provider' });
    await new Promise((r) => setTimeout(r, HEDGE_MS + 1000));
    const [row] = await t.app.outbox.deliveries.search({}, { limit: 1 });
    expect(row?.kind).toBe('push');
    const attempts = await t.app.outbox.deliveries.attemptsOf(row?.id ?? 0);
    expect(attempts.map((a) => [a.provider, a.outcome])).toEqual([['webhook', null]]);
    expect(hook.requests).toHaveLength(1);
    expect(primary.requests + fallback.requests).toBe(0);
  });
});

describe('SMS_HEDGE_AFTER', () => {
  it('is a duration, 2 s by default, or off; anything else stops the server naming the setting', () => {
    const hedge = (value?: string) =>
      loadConfig(value === undefined ? {} : { SMS_HEDGE_AFTER: value }).SMS_HEDGE_AFTER;
    expect(hedge()).toBe(2000);
    expect(hedge('')).toBe(2000);
    expect(hedge('2500ms')).toBe(2500);
    expect(hedge('3')).toBe(3000);
    expect(hedge(' Off ')).toBeNull();
    for (const bad of ['soon', '0', '50ms', '-1'])
      expect(() => hedge(bad)).toThrow(
        'SMS_HEDGE_AFTER: must be a duration of 100ms or more such as 2s or 2500ms, or off',
      );
  });
});
