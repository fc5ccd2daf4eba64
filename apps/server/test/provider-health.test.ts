/**
 * A provider that refuses the school's messages for good (docs/outbox.md#a-provider-that-refuses):
 * said by the console's API and the metrics from the attempts recorded, with the fake gateway a
 * real HTTP server answering `403 {"error":"account suspended"}`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Outcome, refusalRun } from '../src/outbox/provider-health.js';
import { startTestApp, type TestApp, waitUntil } from './helpers.js';
import { DIALECTS, freshPostgres, TEST_DATABASE_URL } from './pg.js';
import { testPhone } from './server-process.js';
import { gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(dialect: (typeof DIALECTS)[number]) {
  const gateway = await startSmsGateway();
  cleanups.push(() => gateway.close());
  const fresh = dialect === 'postgres' ? await freshPostgres() : undefined;
  if (fresh) cleanups.push(() => fresh.drop());
  const env = {
    ...gatewayEnv(gateway),
    DISPATCH_POLL_MS: '100',
    ...(fresh ? { DATABASE_URL: fresh.url } : {}),
  };
  const t = await startTestApp(env);
  cleanups.push(() => t.close());
  return { t, gateway, env };
}

let next = 3000;
/** Sends one AuthCode and waits until its SMS is settled (`dead` or `sent` counts one more). */
async function sendCode(t: TestApp, settled: 'dead' | 'sent'): Promise<void> {
  const before = (await t.app.deliveryRollups.stateCounts())[settled];
  const phone = testPhone(next++);
  const res = await t.app.inject({
    method: 'GET',
    url: `/AuthCodeSending.asmx/AuthCode?code=123456&phone=${encodeURIComponent(phone)}`,
  });
  expect(res.statusCode).toBe(200);
  await waitUntil(async () => (await t.app.deliveryRollups.stateCounts())[settled] === before + 1, {
    what: `the code ${settled}`,
  });
}

const smsProvider = async (t: TestApp) =>
  (await t.inject({ method: 'GET', url: '/api/service' })).json().providers.sms;

const refusingMetric = async (t: TestApp) =>
  (await t.app.inject({ method: 'GET', url: '/metrics' })).body
    .split('\n')
    .find((l) => l.startsWith('school_provider_refusing{kind="sms",provider="http"}'));

const suspended = (gateway: SmsGateway) => {
  gateway.refusing = 403;
  gateway.refusal = '{"error":"account suspended"}';
};

describe.each(DIALECTS)('a provider refusing every SMS (%s)', (dialect) => {
  it('is said refusing after 3 refusals in a row, in its own words, and clears once one is sent', async () => {
    const { t, gateway } = await start(dialect);
    expect((await smsProvider(t)).refusing).toBeNull();
    expect(await refusingMetric(t)).toBe('school_provider_refusing{kind="sms",provider="http"} 0');

    suspended(gateway);
    const firstRefused = Date.now();
    await sendCode(t, 'dead');
    await sendCode(t, 'dead');
    // Two could be two messages' bad luck.
    expect((await smsProvider(t)).refusing).toBeNull();
    await sendCode(t, 'dead');

    const sms = await smsProvider(t);
    expect(sms.refusing).toMatchObject({
      reason: 'account suspended',
      status: 403,
      refusals: 3,
      attempts: 3,
    });
    // Since its first refusal.
    expect(Date.parse(sms.refusing.since)).toBeGreaterThanOrEqual(firstRefused);
    expect(Date.parse(sms.refusing.since)).toBeLessThan(Date.now());
    // Three refusals do not open the circuit (five do): the circuit alone would say "working".
    expect(sms.circuit.state).toBe('closed');
    expect(await refusingMetric(t)).toBe('school_provider_refusing{kind="sms",provider="http"} 1');

    // The account fixed: one code sent clears it.
    gateway.refusing = undefined;
    await sendCode(t, 'sent');
    expect((await smsProvider(t)).refusing).toBeNull();
    expect(await refusingMetric(t)).toBe('school_provider_refusing{kind="sms",provider="http"} 0');
  });

  it('says nothing of one message refused (an invalid number), however often', async () => {
    const { t, gateway } = await start(dialect);
    gateway.refusing = 400;
    gateway.refusal = '{"error":"invalid number"}';
    for (let i = 0; i < 3; i++) await sendCode(t, 'dead');
    expect((await smsProvider(t)).refusing).toBeNull();
    expect(await refusingMetric(t)).toBe('school_provider_refusing{kind="sms",provider="http"} 0');
  });
});

describe.skipIf(!TEST_DATABASE_URL)('a provider refusing, with several instances (postgres)', () => {
  it('is said refusing by an instance that sent nothing to it', async () => {
    const { t, gateway, env } = await start('postgres');
    suspended(gateway);
    for (let i = 0; i < 3; i++) await sendCode(t, 'dead');
    // Another instance on the same database, with lanes and circuits of its own, untouched.
    const other = await startTestApp(env);
    cleanups.push(() => other.close());
    expect(other.app.outbox.circuits().find((c) => c.kind === 'sms')?.state).toBe('closed');
    expect((await smsProvider(other)).refusing).toMatchObject({
      reason: 'account suspended',
      status: 403,
      refusals: 3,
    });
    expect(await refusingMetric(other)).toBe('school_provider_refusing{kind="sms",provider="http"} 1');
  });
});

describe('the rule', () => {
  /** Outcomes newest first, from letters: r a refusal (403), p one message refused (400), t a timeout, s sent. */
  const outcomes = (letters: string): Outcome[] =>
    [...letters].map((c, i) => ({
      id: 100 - i,
      startedAt: 1000 - i,
      finishedAt: 1000 - i,
      outcome: c === 's' ? 'sent' : c === 't' ? 'transient' : 'permanent',
      status: c === 'r' ? 403 : c === 'p' ? 400 : c === 't' ? 503 : null,
    }));

  it('refusing: 3 refusals in a row, counted back to the last message sent', () => {
    expect(refusalRun(outcomes('rrrtrs'))).toMatchObject({ refusals: 4, attempts: 5, since: 996 });
    expect(refusalRun(outcomes('rrr'))).toMatchObject({ refusals: 3, attempts: 3, since: 998 });
  });

  it('refusing: 8 of the last 10, timeouts between', () => {
    expect(refusalRun(outcomes('rtrrtrrrrrs'))).toMatchObject({ refusals: 8, attempts: 10 });
    expect(refusalRun(outcomes('rtrrtrrtrrs'))).toBeUndefined();
  });

  it('not refusing: the newest sent, fewer in a row, or one message refused', () => {
    expect(refusalRun(outcomes('srrrrrrrrr'))).toBeUndefined();
    expect(refusalRun(outcomes('rrsrrr'))).toBeUndefined();
    expect(refusalRun(outcomes('ppppp'))).toBeUndefined();
    expect(refusalRun(outcomes(''))).toBeUndefined();
  });
});
