import { Writable } from 'node:stream';
import type { CallDetail, CallList } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { callRecord } from '../src/recording/record.js';
import { lastCall, registerSchool, startTestApp, type TestApp, tempDataDir } from './helpers.js';

const soap11 = (inner: string) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>${inner}</soap:Body></soap:Envelope>`;
const soap12 = (inner: string) =>
  `<?xml version="1.0" encoding="utf-8"?><soap12:Envelope xmlns:soap12="http://www.w3.org/2003/05/soap-envelope"><soap12:Body>${inner}</soap12:Body></soap12:Envelope>`;
const authCode =
  '<AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>+44 7911 123456</phone></AuthCode>';

describe('call records', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('records a call from every binding, with the code masked everywhere', async () => {
    const calls = [
      {
        binding: 'soap11',
        req: {
          method: 'POST' as const,
          url: '/AuthCodeSending.asmx',
          headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
          payload: soap11(authCode),
        },
      },
      {
        binding: 'soap12',
        req: {
          method: 'POST' as const,
          url: '/AuthCodeSending.asmx',
          headers: { 'content-type': 'application/soap+xml; charset=utf-8' },
          payload: soap12(authCode),
        },
      },
      {
        binding: 'http-get',
        req: {
          method: 'GET' as const,
          url: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456',
        },
      },
      {
        binding: 'http-post',
        req: {
          method: 'POST' as const,
          url: '/AuthCodeSending.asmx/AuthCode',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: 'code=4821&phone=%2B447911123456',
        },
      },
    ];
    for (const { binding, req } of calls) {
      const before = await t.app.history.count();
      const res = await t.app.inject({
        ...req,
        remoteAddress: '203.0.113.9',
        headers: { ...req.headers, 'user-agent': 'ksoap2-android/2.6.0+' },
      });
      expect(res.statusCode, binding).toBe(200);
      expect(await t.app.history.count()).toBe(before + 1);
      const row = await lastCall(t.app);
      expect(row).toMatchObject({
        group_name: 'AuthCodeSending',
        operation: 'AuthCode',
        binding,
        caller_ip: '203.0.113.9',
        user_agent: 'ksoap2-android/2.6.0+',
        outcome: 'ok',
        status: 200,
        error: null,
      });
      expect(JSON.parse(row.params ?? '')).toEqual({ code: '***', phone: '+447911123456' });
      expect(row.request).not.toContain('4821');
      expect(row.request).toContain('***');
      expect(row.response).toMatch(/^HTTP\/1\.1 200/);
      expect(row.duration_ms).toBeGreaterThanOrEqual(0);
      expect(Math.abs(row.at - Date.now())).toBeLessThan(60_000);
    }
  });

  it('records failures with their outcome, status and the text the caller got', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode?code=4821' });
    expect(res.statusCode).toBe(500);
    expect(res.body).toBe('Missing parameter: phone.\r\n');
    const row = await lastCall(t.app);
    expect(row).toMatchObject({
      binding: 'http-get',
      operation: 'AuthCode',
      outcome: 'client-error',
      status: 500,
      error: 'Missing parameter: phone.',
    });
    expect(JSON.parse(row.params ?? '')).toEqual({ code: '***' });
  });

  it('caps the raw request and response it keeps', async () => {
    const small = await startTestApp({ RECORD_MAX_BYTES: '1024' });
    try {
      const padding = `<!-- ${'x'.repeat(5000)} -->`;
      await small.app.inject({
        method: 'POST',
        url: '/PushNotificationMobile.asmx',
        headers: { 'content-type': 'text/xml', soapaction: 'http://tempuri.org/pushNoti' },
        payload: soap11(`<pushNoti xmlns="http://tempuri.org/"/>${padding}`),
      });
      const row = await lastCall(small.app);
      expect(row.outcome).toBe('ok');
      expect(row.request_bytes).toBeGreaterThan(5000);
      expect(Buffer.byteLength(row.request)).toBeLessThan(1200);
      expect(row.request).toMatch(/…\[truncated: \d+ more bytes\]$/);
    } finally {
      await small.close();
    }
  });
});

describe('when a call arrived', () => {
  afterAll(() => vi.restoreAllMocks());

  it('is never recorded before the millisecond it arrived in', () => {
    const facts = {
      group: 'AuthCodeSending',
      operation: 'AuthCode',
      binding: 'http-get' as const,
      params: null,
      outcome: 'ok' as const,
      status: 200,
      error: null,
      request: 'GET / HTTP/1.1',
      response: 'HTTP/1.1 200 OK',
      userAgent: null,
    };
    const request = { ip: '127.0.0.1', headers: {} } as never;
    // Answered at 1000.0–1000.99 ms after 0.6 ms: it arrived at 999.4–1000.39, so possibly in ms
    // 1000, after a History `from` of 1000 taken just before it was sent.
    vi.spyOn(Date, 'now').mockReturnValue(1000);
    expect(callRecord(request, { elapsedTime: 0.6 } as never, 1000, facts, null).at).toBe(1000);
    // 2.4 ms: it arrived at 997.6–998.59, in ms 998 at the latest; the whole milliseconds stay.
    expect(callRecord(request, { elapsedTime: 2.4 } as never, 1000, facts, null).at).toBe(998);
  });
});

describe('request ids', () => {
  let t: TestApp;
  let logged = '';
  beforeAll(async () => {
    const stream = new Writable({
      write(chunk, _enc, done) {
        logged += chunk.toString();
        done();
      },
    });
    t = await startTestApp({}, undefined, { level: 'info', stream });
  });
  afterAll(() => t.close());

  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  /** Makes a call over HTTP GET with these headers; answers its record as the API shows it. */
  async function callWith(headers: Record<string, string>) {
    const res = await t.app.inject({
      method: 'GET',
      url: '/PushNotificationMobile.asmx/pushNoti',
      headers,
    });
    expect(res.statusCode).toBe(200);
    // The .asmx answer's headers are byte-exact: the id is not among them.
    expect(res.headers['x-request-id']).toBeUndefined();
    const row = await lastCall(t.app);
    const detail = await t.inject({ method: 'GET', url: `/api/calls/${row.id}` });
    expect(detail.statusCode).toBe(200);
    return { row, detail: detail.json() as CallDetail, api: detail };
  }

  it("keeps the proxy's X-Request-Id, logs under it and shows it through the API", async () => {
    const { row, detail } = await callWith({ 'x-request-id': 'abc-123' });
    expect(row.request_id).toBe('abc-123');
    expect(detail.requestId).toBe('abc-123');
    const lines = logged
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { reqId?: string; req?: { url?: string } });
    expect(lines.find((l) => l.req?.url === '/PushNotificationMobile.asmx/pushNoti')?.reqId).toBe('abc-123');
    const list = await t.inject({ method: 'GET', url: '/api/calls?operation=pushNoti&limit=1' });
    expect((list.json() as CallList).items[0]?.requestId).toBe('abc-123');
  });

  it('gives a call without one a UUID of its own, different each time', async () => {
    const first = await callWith({});
    const second = await callWith({});
    expect(first.detail.requestId).toMatch(UUID);
    expect(second.detail.requestId).toMatch(UUID);
    expect(second.detail.requestId).not.toBe(first.detail.requestId);
  });

  it('replaces an X-Request-Id that is not a plausible id with a UUID', async () => {
    for (const given of ['abc 123', 'x'.repeat(129), 'x'.repeat(200), '', 'a/b', 'naïve', '<script>']) {
      const { detail } = await callWith({ 'x-request-id': given });
      expect(detail.requestId, JSON.stringify(given)).toMatch(UUID);
    }
    const longest = 'A.b_9:z-'.repeat(16);
    expect((await callWith({ 'x-request-id': longest })).detail.requestId).toBe(longest);
  });

  it('answers the API with the id of its own request', async () => {
    const res = await t.inject({
      method: 'GET',
      url: '/api/calls?limit=1',
      headers: { 'x-request-id': 'api-7' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe('api-7');
    const other = await t.inject({ method: 'GET', url: '/api/nothing-here' });
    expect(other.statusCode).toBe(404);
    expect(other.headers['x-request-id']).toMatch(UUID);
  });
});

describe('durability', () => {
  it('keeps records across a restart of the server', async () => {
    const data = tempDataDir();
    try {
      const first = await startTestApp({}, data.dir);
      await first.app.inject({ method: 'GET', url: '/PushNotificationMobile.asmx/pushNoti' });
      await first.app.inject({
        method: 'GET',
        url: '/BookPdf.asmx/GetBookPdfByTerm?termId=T1&srid=S&classId=7B',
      });
      await first.app.close();

      const second = await startTestApp({}, data.dir);
      const rows = await second.app.history.list({ limit: 10 });
      expect(rows.map((r) => [r.operation, r.outcome, r.status])).toEqual([
        ['GetBookPdfByTerm', 'client-error', 404],
        ['pushNoti', 'ok', 200],
      ]);
      await second.app.close();
    } finally {
      data.remove();
    }
  });

  it('answers only after the record is committed, and commits concurrent calls together', async () => {
    const t = await startTestApp();
    await registerSchool(t.app);
    try {
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          t.app.inject({
            method: 'GET',
            url: `/NotificationNotes.asmx/SendMarkNotes?id=${i}&id_class=7B&baseUrlSchool=https://school.example.org/`,
          }),
        ),
      );
      expect(responses.every((r) => r.statusCode === 200)).toBe(true);
      // Read straight from the database: every answered call is already there, with its push.
      const rows = await t.app.store.db.selectFrom('calls').select(['id', 'params']).execute();
      expect(new Set(rows.map((r) => JSON.parse(r.params ?? '{}').id)).size).toBe(50);
      const pushes = await t.app.store.db.selectFrom('deliveries').select(['call_id', 'recipient']).execute();
      expect(pushes).toHaveLength(50);
      expect(new Set(pushes.map((p) => p.recipient))).toEqual(new Set(['school-example-class-7B']));
    } finally {
      await t.close();
    }
  });
});

describe('retention', () => {
  it('removes calls older than RETENTION_DAYS, with their deliveries, when the server starts and every day after', async () => {
    const day = 86_400_000;
    const now = Date.parse('2026-11-20T12:00:00.000Z');
    // The clock and the daily sweep's interval are fake; timeouts, immediates (the store's group
    // commit), sockets and the search worker keep real time.
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'], now });
    const data = tempDataDir();
    try {
      const first = await startTestApp({}, data.dir);
      const base = {
        group_name: 'AuthCodeSending',
        operation: 'AuthCode',
        binding: 'soap11' as const,
        caller_ip: '203.0.113.1',
        outcome: 'ok' as const,
        status: 200,
        duration_ms: 1,
        request: 'r',
        request_bytes: 1,
        response: 'r',
        response_bytes: 1,
      };
      const sms = {
        kind: 'sms' as const,
        provider: 'log',
        recipient: '+447911123456',
        payload: { text: 'x 1234', maskedText: 'x ***' },
      };
      await first.app.recorder.record({ ...base, at: now - 40 * day }, [sms]);
      const nearly = await first.app.recorder.record({ ...base, at: now - 29.5 * day }, [sms]);
      const recent = await first.app.recorder.record({ ...base, at: now - 10 * day }, [sms]);
      await first.app.close();

      const second = await startTestApp(
        // The dispatcher's sweep is an interval too: every 10 minutes, not every second, over the day.
        { RETENTION_DAYS: '30', DISPATCH_POLL_MS: '600000' },
        data.dir,
      );
      try {
        const left = async () => ({
          calls: (await second.app.history.list({ limit: 10 })).map((c) => c.id).sort((a, b) => a - b),
          deliveries: (await second.app.store.db.selectFrom('deliveries').select('call_id').execute())
            .map((d) => d.call_id)
            .sort((a, b) => a - b),
        });
        // At start: only the call older than 30 days goes, with its delivery.
        expect(await left()).toEqual({ calls: [nearly, recent], deliveries: [nearly, recent] });
        // A day later the sweep runs again, and the call that has turned 30.5 days old goes too.
        vi.advanceTimersByTime(day - 1);
        expect(await left()).toEqual({ calls: [nearly, recent], deliveries: [nearly, recent] });
        vi.advanceTimersByTime(1);
        expect(await left()).toEqual({ calls: [recent], deliveries: [recent] });
      } finally {
        await second.app.close();
      }
    } finally {
      vi.useRealTimers();
      data.remove();
    }
  });
});

describe('logs', () => {
  it('never contain the auth code', async () => {
    const data = tempDataDir();
    let logged = '';
    const stream = new Writable({
      write(chunk, _enc, done) {
        logged += chunk.toString();
        done();
      },
    });
    const config = loadConfig({ DATA_DIR: data.dir, SQLITE_SYNCHRONOUS: 'NORMAL' });
    const app = await buildApp(config, { logger: { level: 'trace', stream } });
    try {
      await app.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=90817263&phone=%2B447911123456',
      });
      await app.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode?CODE=90817263&phone=bad' });
      expect(logged).toContain('/AuthCodeSending.asmx/AuthCode?code=***');
      expect(logged).not.toContain('90817263');
    } finally {
      await app.close();
      data.remove();
    }
  });
});
