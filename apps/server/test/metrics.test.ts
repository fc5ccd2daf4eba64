import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InjectOptions } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { lastCall, startTestApp, type TestApp, waitUntil } from './helpers.js';

// What a Prometheus scraper reads: samples of the text exposition format.

interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key = '', value = ''] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[key] = value;
    samples.push({ name: match[1] ?? '', labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the sample with exactly these labels; undefined when the scrape has none. */
function sample(samples: readonly Sample[], name: string, labels: Record<string, string> = {}) {
  const want = Object.entries(labels).sort();
  return samples.find(
    (s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === JSON.stringify(want),
  )?.value;
}

async function scrape(t: TestApp, options: Partial<InjectOptions> = {}) {
  const res = await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1', ...options });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(res.body);
}

const soapAuthCode = (code: string, phone = '+447911123456'): InjectOptions => ({
  method: 'POST',
  url: '/AuthCodeSending.asmx',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
  payload: `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>${code}</code><phone>${phone}</phone></AuthCode></soap:Body></soap:Envelope>`,
});

/** Waits until `check` holds (helpers.ts's waitUntil, looking every 20 ms). */
const until = (check: () => Promise<boolean> | boolean, what: string, ms = 10_000) =>
  waitUntil(check, { what, timeoutMs: ms, intervalMs: 20 });

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function app(env: Record<string, string> = {}): Promise<TestApp> {
  const t = await startTestApp(env);
  cleanups.push(() => t.close());
  return t;
}

describe('/readyz', () => {
  it('is ready on a fresh app, for any Host, unlike the rest of the server', async () => {
    const t = await app();
    const res = await t.app.inject({ method: 'GET', url: '/readyz', headers: { host: '10.0.0.7:3000' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', database: true, migrations: true, disk: 'ok' });
    // The same Host elsewhere is refused: the exemption is the probes' alone.
    const other = await t.app.inject({
      method: 'GET',
      url: '/api/session',
      headers: { host: '10.0.0.7:3000' },
    });
    expect(other.statusCode).toBe(421);
  });

  it('answers 503 saying why while calls are refused; /healthz stays 200 and says the same', async () => {
    const t = await app();
    const status = {
      up: false,
      reason: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:5432',
      since: Date.now(),
    };
    vi.spyOn(t.app.store, 'readiness').mockReturnValue({ database: false, migrations: true, status });
    const down = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(down.statusCode).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    expect(down.json()).toEqual({
      status: 'unavailable',
      database: false,
      migrations: true,
      disk: 'ok',
      reasons: [`database: ${status.reason}`],
    });
    // Liveness: the process is alive, whatever the database; the body says how it is.
    const health = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok', database: 'down', disk: 'ok' });
  });
});

describe('/metrics', () => {
  it('counts calls by operation, binding and outcome, as the History records them', async () => {
    const t = await app();
    for (const code of ['4821', '4822'])
      expect((await t.app.inject(soapAuthCode(code))).statusCode).toBe(200);
    const bad = await t.app.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode?code=1&phone=abc' });
    expect(bad.statusCode).toBe(400);
    const unknownOp = await t.app.inject({ method: 'GET', url: '/AuthCodeSending.asmx/Nope' });
    expect(unknownOp.statusCode).toBe(500);
    const unknownRecord = await lastCall(t.app);
    expect(unknownRecord.operation).toBeNull();

    const m = await scrape(t);
    expect(sample(m, 'school_calls_total', { operation: 'AuthCode', binding: 'soap11', outcome: 'ok' })).toBe(
      2,
    );
    expect(
      sample(m, 'school_calls_total', {
        operation: 'AuthCode',
        binding: 'http-get',
        outcome: 'client-error',
      }),
    ).toBe(1);
    expect(
      sample(m, 'school_calls_total', {
        operation: 'unknown',
        binding: unknownRecord.binding,
        outcome: unknownRecord.outcome,
      }),
    ).toBe(1);
    // Every call counted once: as many as the History holds.
    const counted = m.filter((s) => s.name === 'school_calls_total').reduce((n, s) => n + s.value, 0);
    expect(counted).toBe(4);
    expect(
      sample(m, 'school_call_duration_seconds_count', { operation: 'AuthCode', binding: 'soap11' }),
    ).toBe(2);
    expect(
      sample(m, 'school_call_duration_seconds_sum', { operation: 'AuthCode', binding: 'soap11' }),
    ).toBeGreaterThan(0);
    // The process's own metrics, prefixed.
    expect(sample(m, 'school_process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('counts a call that could not be recorded as unrecorded', async () => {
    const t = await app();
    vi.spyOn(t.app.recorder, 'record').mockRejectedValueOnce(new Error('disk I/O error'));
    const res = await t.app.inject(soapAuthCode('4821'));
    expect(res.statusCode).toBe(500);
    const m = await scrape(t);
    expect(
      sample(m, 'school_calls_total', { operation: 'AuthCode', binding: 'soap11', outcome: 'unrecorded' }),
    ).toBe(1);
    expect(sample(m, 'school_calls_total', { operation: 'AuthCode', binding: 'soap11', outcome: 'ok' })).toBe(
      undefined,
    );
  });

  it('shows the outbox: deliveries by status, how many are due and how long the oldest has waited', async () => {
    const t = await app();
    // A dispatcher that has stopped sending: what the outbox gauges are there to catch.
    await t.app.outbox.stop();
    for (const code of ['4821', '4822', '4823'])
      expect((await t.app.inject(soapAuthCode(code))).statusCode).toBe(200);

    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + 90_000);
    const later = await scrape(t);
    vi.restoreAllMocks();
    expect(sample(later, 'school_deliveries', { status: 'pending' })).toBe(3);
    expect(sample(later, 'school_deliveries', { status: 'sent' })).toBe(0);
    expect(sample(later, 'school_outbox_due')).toBe(3);
    const age = sample(later, 'school_outbox_oldest_due_age_seconds') ?? Number.NaN;
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(120);
  });

  it('shows an empty outbox once everything is sent', async () => {
    const t = await app({ DISPATCH_POLL_MS: '20' });
    expect((await t.app.inject(soapAuthCode('4821'))).statusCode).toBe(200);
    await until(async () => (await t.app.deliveryRollups.stateCounts()).logged === 1, 'logged');
    const m = await scrape(t);
    expect(sample(m, 'school_deliveries', { status: 'sent' })).toBe(1);
    expect(sample(m, 'school_deliveries', { status: 'pending' })).toBe(0);
    expect(sample(m, 'school_outbox_due')).toBe(0);
    expect(sample(m, 'school_outbox_oldest_due_age_seconds')).toBe(0);
  });

  it('times provider requests by kind, provider and outcome', async () => {
    let n = 0;
    const gateway = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const down = n++ === 0;
        res.writeHead(down ? 503 : 200, { 'content-type': 'application/json', 'retry-after': '0' });
        res.end(down ? '{"error":"unavailable"}' : '{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => gateway.close(() => resolve())));
    const t = await app({
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/send`,
      SMS_HTTP_BODY: 'to={to}&text={text}',
      DELIVERY_RETRY_BASE_MS: '20',
      DELIVERY_RETRY_MAX_MS: '200',
      DISPATCH_POLL_MS: '20',
    });
    expect((await t.app.inject(soapAuthCode('4821'))).statusCode).toBe(200);
    await until(async () => (await t.app.deliveryRollups.stateCounts()).sent === 1, 'sent after one failure');
    const m = await scrape(t);
    const count = (outcome: string) =>
      sample(m, 'school_provider_request_duration_seconds_count', { kind: 'sms', provider: 'http', outcome });
    expect(count('transient')).toBe(1);
    expect(count('sent')).toBe(1);
    expect(count('permanent')).toBe(undefined);
  });

  it('is refused to addresses outside METRICS_ALLOWED_IPS, for any Host', async () => {
    const t = await app();
    const refused = await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.9' });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(refused.body).not.toContain('school_');
    // IPv6 loopback is allowed by default, and a probe's Host does not matter.
    const local = await scrape(t, { remoteAddress: '::1', headers: { host: 'school-1.internal:3000' } });
    expect(sample(local, 'school_outbox_due')).toBe(0);
    // Declared public in the route table (the access matrix in auth.test.ts walks it).
    const route = t.app.routeTable.find((r) => r.url === '/metrics');
    expect(route?.method).toBe('GET');
    expect(route?.config?.access).toBe('public');
    expect(t.app.routeTable.find((r) => r.url === '/readyz')?.config?.access).toBe('public');
  });

  it('is served to the configured ranges only, or to anyone with *', async () => {
    const ranged = await app({ METRICS_ALLOWED_IPS: '203.0.113.0/24, 2001:db8::/32' });
    for (const [ip, status] of [
      ['203.0.113.9', 200],
      ['2001:db8::5', 200],
      ['127.0.0.1', 403],
      ['198.51.100.1', 403],
    ] as const) {
      const res = await ranged.app.inject({ method: 'GET', url: '/metrics', remoteAddress: ip });
      expect(res.statusCode, ip).toBe(status);
    }
    const open = await app({ METRICS_ALLOWED_IPS: '*' });
    expect(
      (await open.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '198.51.100.1' })).statusCode,
    ).toBe(200);
  });

  it('rejects a METRICS_ALLOWED_IPS that is not addresses or ranges, naming it', () => {
    expect(loadConfig({ METRICS_ALLOWED_IPS: 'any' }).METRICS_ALLOWED_IPS).toBeNull();
    expect(loadConfig({}).METRICS_ALLOWED_IPS).toEqual(['127.0.0.1', '::1']);
    expect(() => loadConfig({ METRICS_ALLOWED_IPS: '10.0.0.0/8,prometheus' })).toThrow(ConfigError);
    expect(() => loadConfig({ METRICS_ALLOWED_IPS: '10.0.0.0/8,prometheus' })).toThrow(/METRICS_ALLOWED_IPS/);
  });
});
