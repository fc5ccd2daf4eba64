/**
 * Providers, their circuits and the fallback SMS provider
 * (docs/outbox.md#providers-lanes-and-circuits), with two fake gateways that are real
 * HTTP servers and, as real ones with idempotency keys do, send a key's message once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { COOL_DOWN_MS } from '../src/outbox/circuit.js';
import { startTestApp, type TestApp, waitUntil } from './helpers.js';
import { testPhone } from './server-process.js';
import { fallbackGatewayEnv, gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(env: Record<string, string> = {}) {
  const primary = await startSmsGateway(5);
  const fallback = await startSmsGateway(5);
  cleanups.push(
    () => primary.close(),
    () => fallback.close(),
  );
  const t = await startTestApp({
    ...gatewayEnv(primary),
    ...fallbackGatewayEnv(fallback),
    DISPATCH_POLL_MS: '100',
    ...env,
  });
  cleanups.push(() => t.close());
  return { t, primary, fallback };
}

/** Sends AuthCodes over HTTP GET, one phone each; answers when each was accepted. */
async function sendCodes(t: TestApp, first: number, count: number): Promise<Map<string, number>> {
  const acceptedAt = new Map<string, number>();
  for (let i = first; i < first + count; i++) {
    const phone = testPhone(i);
    const res = await t.app.inject({
      method: 'GET',
      url: `/AuthCodeSending.asmx/AuthCode?code=${100000 + i}&phone=${encodeURIComponent(phone)}`,
    });
    expect(res.statusCode).toBe(200);
    acceptedAt.set(phone, Date.now());
  }
  return acceptedAt;
}

/** Every phone's message sent by `gateway`, each exactly once (one request per key). */
function expectSentOnceBy(gateway: SmsGateway, phones: Iterable<string>): void {
  const sentTo = gateway.sent.map((m) => m.to);
  for (const phone of phones)
    expect(
      sentTo.filter((p) => p === phone),
      phone,
    ).toHaveLength(1);
  expect([...gateway.requestsByKey.values()].filter((n) => n !== 1)).toEqual([]);
}

async function attemptsOf(t: TestApp, phone: string): Promise<(string | null)[][]> {
  const [delivery] = await t.app.outbox.deliveries.search({ recipient: phone }, { limit: 1 });
  const attempts = await t.app.outbox.deliveries.attemptsOf(delivery?.id ?? 0);
  return attempts.map((a) => [a.provider, a.outcome]);
}

const circuitOf = async (t: TestApp, provider: string) =>
  (await t.app.inject({ method: 'GET', url: '/metrics' })).body
    .split('\n')
    .find((l) => l.startsWith(`school_provider_circuit{kind="sms",provider="${provider}"}`));

describe('the fallback SMS provider', () => {
  it('takes every code the primary refuses, at once; the primary is paused once its circuit opens', async () => {
    const { t, primary, fallback } = await start();
    primary.refusing = 503;
    const accepted = await sendCodes(t, 1000, 12);
    await waitUntil(() => fallback.sent.length === 12, { what: 'the codes at the fallback' });
    expectSentOnceBy(fallback, accepted.keys());
    expect(primary.sent).toHaveLength(0);
    // Refused for certain: no duplicate is possible, and none is counted.
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).not.toMatch(
      /school_deliveries_sent_after_unsure_total\{[^}]*\} [1-9]/,
    );
    // The first ones were tried on the primary, refused for certain, and sent by the fallback.
    expect(await attemptsOf(t, testPhone(1000))).toEqual([
      ['http', 'transient'],
      ['http-fallback', 'sent'],
    ]);
    // Five refusals in a row opened the primary's circuit: later codes went straight to the fallback.
    expect(await circuitOf(t, 'http')).toBe('school_provider_circuit{kind="sms",provider="http"} 2');
    // (One or two more may have started on it, in their calls' commits, before the fifth refusal came back.)
    expect(primary.requests).toBeLessThan(8);
    expect(await attemptsOf(t, testPhone(1011))).toEqual([['http-fallback', 'sent']]);
    // The console says so, and names the provider of each delivery.
    const service = (await t.inject({ method: 'GET', url: '/api/service' })).json();
    expect(service.providers.sms.circuit.state).toBe('open');
    // Open: it says when it is tried again (its cool-down after it opened).
    const { since, until } = service.providers.sms.circuit;
    expect(Date.parse(until) - Date.parse(since)).toBe(COOL_DOWN_MS);
    expect(service.providers.smsFallback).toMatchObject({
      id: 'http-fallback',
      circuit: { state: 'closed', until: null },
    });
    const list = (await t.inject({ method: 'GET', url: '/api/deliveries?limit=1' })).json();
    expect(list.items[0].provider).toBe('http-fallback');
    const detail = (await t.inject({ method: 'GET', url: `/api/deliveries/${list.items[0].id}` })).json();
    expect(detail.attemptLog.map((a: { provider: string }) => a.provider)).toEqual(['http-fallback']);
  });

  it('tries a message the primary refused permanently on the fallback once; a refusal there is final', async () => {
    const { t, primary, fallback } = await start();
    primary.refusing = 400;
    fallback.refusing = 400;
    await sendCodes(t, 1100, 1);
    await waitUntil(async () => (await t.app.deliveryRollups.stateCounts()).dead === 1);
    expect(await attemptsOf(t, testPhone(1100))).toEqual([
      ['http', 'permanent'],
      ['http-fallback', 'permanent'],
    ]);
    // One message's refusal says nothing of the provider: its circuit stays closed.
    expect(await circuitOf(t, 'http')).toBe('school_provider_circuit{kind="sms",provider="http"} 0');
  });

  it('does not send a timed-out code to the fallback until the circuit opens, then sends it there with the same key', async () => {
    const { t, primary, fallback } = await start({
      PROVIDER_TIMEOUT_MS: '300',
      DELIVERY_RETRY_BASE_MS: '200',
      DELIVERY_RETRY_MAX_MS: '400',
    });
    primary.hanging = true;
    const accepted = await sendCodes(t, 1200, 8);
    await waitUntil(() => fallback.sent.length === 8, {
      timeoutMs: 15_000,
      what: 'the codes at the fallback',
    });
    expectSentOnceBy(fallback, accepted.keys());
    // The fallback has answered the last one; its attempt is recorded a moment later.
    await waitUntil(async () => (await t.app.deliveryRollups.stateCounts()).sent === 8, {
      what: 'the codes recorded as sent',
    });
    // Each first went to the primary (its outcome unknown), and reached the fallback only after the
    // primary's circuit opened, with the key the primary was given.
    const primaryKeys = new Set(primary.requestsByKey.keys());
    let unsure = 0;
    for (const m of fallback.sent) {
      const attempts = await attemptsOf(t, m.to);
      expect(attempts.at(-1)).toEqual(['http-fallback', 'sent']);
      if (attempts[0]?.[0] !== 'http') continue;
      expect(primaryKeys.has(m.key)).toBe(true);
      // The primary never said whether it took it: the delivery says it may have arrived twice.
      const [delivery] = await t.app.outbox.deliveries.search({ recipient: m.to }, { limit: 1 });
      expect(delivery?.unsure_provider).toBe('http');
      unsure++;
    }
    expect(unsure).toBeGreaterThan(0);
    expect(await circuitOf(t, 'http')).toBe('school_provider_circuit{kind="sms",provider="http"} 2');
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toContain(
      `school_deliveries_sent_after_unsure_total{kind="sms",provider="http-fallback",unsure="http"} ${unsure}`,
    );
  });

  it(
    'goes back to the primary once it works again: probed after its cool-down, then closed',
    async () => {
      const { t, primary, fallback } = await start();
      primary.refusing = 503;
      await sendCodes(t, 1300, 6);
      await waitUntil(() => fallback.sent.length === 6);
      expect(await circuitOf(t, 'http')).toBe('school_provider_circuit{kind="sms",provider="http"} 2');
      primary.refusing = undefined;
      // After the cool-down the next codes probe it (the others still go to the fallback meanwhile);
      // three that work close the circuit.
      await new Promise((r) => setTimeout(r, COOL_DOWN_MS + 200));
      await sendCodes(t, 1310, 6);
      await waitUntil(() => primary.sent.length + fallback.sent.length === 12);
      expect(primary.sent.length).toBeGreaterThanOrEqual(3);
      expect(await circuitOf(t, 'http')).toBe('school_provider_circuit{kind="sms",provider="http"} 0');
      // New codes go back to it.
      const before = fallback.sent.length;
      await sendCodes(t, 1320, 3);
      await waitUntil(() => primary.sent.filter((m) => m.to >= testPhone(1320)).length === 3);
      expect(fallback.sent.length).toBe(before);
    },
    COOL_DOWN_MS + 15_000,
  );
});

describe('fallback settings', () => {
  const base = {
    SMS_PROVIDER: 'http',
    SMS_HTTP_URL: 'https://gateway.example.com/send',
    SMS_HTTP_BODY: 'to={to}&text={text}',
  };
  const refused = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (err) {
      return (err as Error).message;
    }
    return 'accepted';
  };

  it('stops the server at start with a message naming the setting', () => {
    expect(refused({ ...base, SMS_FALLBACK_PROVIDER: 'http' })).toContain(
      'SMS_FALLBACK_HTTP_URL: is required when SMS_FALLBACK_PROVIDER=http',
    );
    expect(
      refused({
        ...base,
        SMS_FALLBACK_PROVIDER: 'http',
        SMS_FALLBACK_HTTP_URL: 'https://backup.example.com/send',
      }),
    ).toContain(
      'SMS_FALLBACK_HTTP_BODY: is required when SMS_FALLBACK_PROVIDER=http and SMS_FALLBACK_HTTP_METHOD=POST',
    );
    expect(
      refused({
        ...base,
        SMS_FALLBACK_PROVIDER: 'http',
        SMS_FALLBACK_HTTP_URL: 'https://GATEWAY.example.com/send/',
        SMS_FALLBACK_HTTP_BODY: 'to={to}&text={text}',
      }),
    ).toContain('SMS_FALLBACK_HTTP_URL: must be another gateway than SMS_HTTP_URL');
    expect(refused({ ...base, SMS_FALLBACK_PROVIDER: 'carrier-pigeon' })).toContain('SMS_FALLBACK_PROVIDER');
    expect(refused({ SMS_FALLBACK_PROVIDER: 'twilio' })).toContain(
      'SMS_FALLBACK_PROVIDER: needs a real SMS_PROVIDER',
    );
    expect(refused({ ...base, SMS_FALLBACK_PROVIDER: 'twilio' })).toContain(
      'TWILIO_ACCOUNT_SID: is required when SMS_FALLBACK_PROVIDER=twilio',
    );
    expect(
      refused({
        SMS_PROVIDER: 'twilio',
        TWILIO_ACCOUNT_SID: `AC${'1'.repeat(32)}`,
        TWILIO_AUTH_TOKEN: 'token',
        TWILIO_FROM: '+15005550006',
        SMS_FALLBACK_PROVIDER: 'twilio',
      }),
    ).toContain('SMS_FALLBACK_PROVIDER: must be another gateway than SMS_PROVIDER');
    expect(
      refused({
        ...base,
        SMS_FALLBACK_PROVIDER: 'http',
        SMS_FALLBACK_HTTP_URL: 'https://backup.example.com/send',
        SMS_FALLBACK_HTTP_BODY: 'to={to}&text={text}',
      }),
    ).toBe('accepted');
  });
});
