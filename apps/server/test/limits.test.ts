import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers.js';

const soap11 = (code: string, phone: string) => ({
  method: 'POST' as const,
  url: '/AuthCodeSending.asmx',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
  payload: `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>${code}</code><phone>${phone}</phone></AuthCode></soap:Body></soap:Envelope>`,
});

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('AuthCode limits under concurrency', () => {
  it('accepts exactly 5 of 200 simultaneous SOAP calls for one phone, and queues exactly 5 SMS', async () => {
    t = await startTestApp({ AUTHCODE_LIMIT_PER_PHONE: '5/15m' });
    const app = t.app;
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => app.inject(soap11(`${1000 + i}`, '+447911123456'))),
    );
    const ok = answers.filter((a) => a.statusCode === 200);
    expect(ok).toHaveLength(5);
    expect(
      answers.filter((a) => a.statusCode === 500 && a.body.includes('Too many codes for this phone')),
    ).toHaveLength(195);
    const sms = await app.store.db.selectFrom('deliveries').select('id').where('kind', '=', 'sms').execute();
    expect(sms).toHaveLength(5);
    // Every call was recorded, accepted or refused.
    expect(await app.history.count()).toBe(200);
  });

  it('keeps the limit across a restart: the window is read back from what was committed', async () => {
    t = await startTestApp({ AUTHCODE_LIMIT_PER_PHONE: '3/15m' });
    const dataDir = t.dataDir;
    for (let i = 0; i < 3; i++)
      expect((await t.app.inject(soap11(`${i}123`, '+447911123456'))).statusCode).toBe(200);
    await t.app.close();
    const again = await startTestApp({ AUTHCODE_LIMIT_PER_PHONE: '3/15m' }, dataDir);
    try {
      const res = await again.app.inject(soap11('9999', '+447911123456'));
      expect(res.statusCode).toBe(500);
      expect(res.body).toContain('Too many codes for this phone: at most 3 per 15 minutes.');
      expect((await again.app.inject(soap11('9999', '+447911123457'))).statusCode).toBe(200);
    } finally {
      await again.app.close();
    }
  });

  it('gives exactly 30 per minute to one caller over 64 connections', async () => {
    t = await startTestApp({ AUTHCODE_LIMIT_PER_IP: '30/1m' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const get = (i: number) =>
      new Promise<number>((resolve, reject) => {
        const phone = encodeURIComponent(`+4479111${String(10000 + i)}`);
        http
          .get(
            {
              port,
              host: '127.0.0.1',
              agent,
              path: `/AuthCodeSending.asmx/AuthCode?code=1234&phone=${phone}`,
            },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            },
          )
          .on('error', reject);
      });
    try {
      const statuses = await Promise.all(Array.from({ length: 256 }, (_, i) => get(i)));
      expect(statuses.filter((s) => s === 200)).toHaveLength(30);
      expect(statuses.filter((s) => s === 429)).toHaveLength(226);
    } finally {
      agent.destroy();
    }
  });

  it("gives staff sending from the console a budget of their own, not the address's that scripts on the machine share", async () => {
    t = await startTestApp({ AUTHCODE_LIMIT_PER_IP: '2/15m' });
    const app = t as TestApp;
    const anonymous = (i: number) =>
      app.app.inject({
        method: 'GET',
        url: `/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B4479111234${50 + i}`,
      });
    const staff = (i: number) =>
      app.inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: '4821', phone: `+4479111234${60 + i}` },
      });
    // Scripts on this machine use up the address's budget...
    expect([
      (await anonymous(0)).statusCode,
      (await anonymous(1)).statusCode,
      (await anonymous(2)).statusCode,
    ]).toEqual([200, 200, 429]);
    // ...and a logged-in admin on the same machine still sends, within a budget of their own.
    const sends = [await staff(0), await staff(1), await staff(2)];
    expect(sends.map((a) => a.statusCode)).toEqual([200, 200, 429]);
    expect(sends[2]?.json().detail).toMatch(/^Too many codes for you \(admin\): at most 2 per 15 minutes\./);
  });

  it('applies the same limits to the console Send', async () => {
    t = await startTestApp({ AUTHCODE_LIMIT_PER_PHONE: '2/15m' });
    const send = () =>
      (t as TestApp).inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: '4821', phone: '+447911123456' },
      });
    const answers = await Promise.all([send(), send(), send(), send()]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 200, 429, 429]);
    const refused = answers.find((a) => a.statusCode === 429);
    expect(refused?.json().detail).toMatch(
      /^Too many codes for this phone: at most 2 per 15 minutes\. Try again in 1[45] minutes\.$/,
    );
  });
});

describe('.asmx callers', () => {
  it('limits all operation calls per address, recording the first refusal of a window only', async () => {
    t = await startTestApp({ ASMX_LIMIT_PER_IP: '10/1m' });
    const app = t.app;
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        app.inject({
          method: 'GET',
          url: '/PushNotificationMobile.asmx/pushNoti',
          remoteAddress: '198.51.100.7',
        }),
      ),
    );
    expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(10);
    const refused = answers.filter((a) => a.statusCode === 429);
    expect(refused).toHaveLength(90);
    expect(Number(refused[0]?.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused[0]?.body).toMatch(
      /^Too many calls from 198\.51\.100\.7: at most 10 per minute\. Try again in \d+ seconds\.$/,
    );
    // 10 calls and one refusal recorded, not 100 rows.
    const rows = await app.history.list({ limit: 200 });
    expect(rows).toHaveLength(11);
    expect(rows.filter((r) => r.status === 429)).toHaveLength(1);
    expect(rows.find((r) => r.status === 429)?.note).toMatch(/not recorded/);
    // Over SOAP the refusal is a Client fault; another address is not affected.
    const soap = await app.inject({ ...soap11('1234', '+447911123456'), remoteAddress: '198.51.100.7' });
    expect(soap.statusCode).toBe(500);
    expect(soap.body).toContain(
      '<faultcode>soap:Client</faultcode><faultstring>Too many calls from 198.51.100.7',
    );
    const other = await app.inject({
      method: 'GET',
      url: '/PushNotificationMobile.asmx/pushNoti',
      remoteAddress: '198.51.100.8',
    });
    expect(other.statusCode).toBe(200);
    // WSDL and help pages are not operation calls.
    expect(
      (
        await app.inject({
          method: 'GET',
          url: '/PushNotificationMobile.asmx?wsdl',
          remoteAddress: '198.51.100.7',
        })
      ).statusCode,
    ).toBe(200);
  });

  it('refuses callers outside ASMX_ALLOWED_IPS on every .asmx path', async () => {
    t = await startTestApp({ ASMX_ALLOWED_IPS: '203.0.113.0/24, 2001:db8::/32' });
    const app = t.app;
    const inside = await app.inject({
      method: 'GET',
      url: '/PushNotificationMobile.asmx/pushNoti',
      remoteAddress: '203.0.113.40',
    });
    expect(inside.statusCode).toBe(200);
    const mapped = await app.inject({
      method: 'GET',
      url: '/PushNotificationMobile.asmx/pushNoti',
      remoteAddress: '::ffff:203.0.113.41',
    });
    expect(mapped.statusCode).toBe(200);
    for (const url of [
      '/PushNotificationMobile.asmx/pushNoti',
      '/PushNotificationMobile.asmx?wsdl',
      '/PushNotificationMobile.asmx',
    ]) {
      const outside = await app.inject({ method: 'GET', url, remoteAddress: '198.51.100.7' });
      expect(outside.statusCode, url).toBe(403);
      expect(outside.body).toBe('Calls from 198.51.100.7 are not allowed here.');
    }
    const soap = await app.inject({ ...soap11('1234', '+447911123456'), remoteAddress: '198.51.100.7' });
    expect(soap.statusCode).toBe(403);
    // The console and the API are not .asmx paths: not restricted by it.
    expect(
      (await t.inject({ method: 'GET', url: '/api/session', remoteAddress: '198.51.100.7' })).statusCode,
    ).toBe(200);
  });
});

describe('bodies and the book library', () => {
  it('refuses a body that would take the bytes being received at once over the budget, before reading it', async () => {
    // .asmx bodies up to 1 MiB (ASMX_MAX_BODY_BYTES raised): two of them fill the budget.
    t = await startTestApp({
      MAX_INFLIGHT_BODY_BYTES: String(2 * 1024 * 1024),
      ASMX_MAX_BODY_BYTES: String(1024 * 1024),
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    // The server's side of each exchange. The budget is taken by the first onRequest hook, in the
    // turn of the server's `request` event, so it has been taken by the turn after it (setImmediate).
    // The response's `close` is when it is given back.
    const exchanges: http.ServerResponse[] = [];
    let onExchange: () => void = () => {};
    t.app.server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
      exchanges.push(res);
      onExchange();
    });
    const exchangesSeen = (n: number) =>
      new Promise<void>((resolve) => {
        onExchange = () => {
          if (exchanges.length >= n) setImmediate(resolve);
        };
        onExchange();
      });
    // Two stalled bodies of 1 MB - 1 byte each hold the budget; a third is refused at once.
    const stalled = [0, 1].map(
      () =>
        new Promise<http.ClientRequest>((resolve) => {
          const req = http.request({
            port,
            host: '127.0.0.1',
            method: 'POST',
            path: '/AuthCodeSending.asmx',
            headers: { 'content-type': 'text/xml', 'content-length': String(1024 * 1024 - 1) },
          });
          req.on('error', () => {});
          req.write('<', () => resolve(req));
        }),
    );
    const held = await Promise.all(stalled);
    await exchangesSeen(2);
    const refused = await fetch(`http://127.0.0.1:${port}/AuthCodeSending.asmx`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml' },
      body: 'x'.repeat(100_000),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    const closed = exchanges.slice(0, 2).map((res) => new Promise((resolve) => res.once('close', resolve)));
    for (const req of held) req.destroy();
    // Once they are gone the bytes are given back.
    await Promise.all(closed);
    const later = await fetch(`http://127.0.0.1:${port}/AuthCodeSending.asmx`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml' },
      body: 'x'.repeat(100_000),
    });
    // Read and answered (400, as ASMX answers a body that is not XML), no longer refused.
    expect(later.status).toBe(400);
  });

  it('answers a book upload announcing more than MAX_BOOK_BYTES with 413 at once, and a full library with 507', async () => {
    t = await startTestApp({ MAX_BOOK_BYTES: '4096', MAX_LIBRARY_BYTES: '6000' });
    const huge = await t.inject({
      method: 'PUT',
      url: '/api/books/2026-1/7B',
      headers: { 'content-type': 'application/pdf', 'content-length': '1073741824' },
      payload: '%PDF-',
    });
    expect(huge.statusCode).toBe(413);
    expect(huge.headers.connection).toBe('close');
    const pdf = (fill: string) => Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(3000, fill)]);
    const first = await t.inject({
      method: 'PUT',
      url: '/api/books/2026-1/7A',
      headers: { 'content-type': 'application/pdf' },
      payload: pdf('a'),
    });
    expect(first.statusCode).toBe(200);
    const second = await t.inject({
      method: 'PUT',
      url: '/api/books/2026-1/7B',
      headers: { 'content-type': 'application/pdf' },
      payload: pdf('b'),
    });
    expect(second.statusCode).toBe(507);
    expect(second.json().detail).toMatch(/^The book library is full/);
  });
});

describe('chunked bodies', () => {
  it('counts a body without a declared length as it arrives, and refuses it past the budget', async () => {
    t = await startTestApp({
      MAX_INFLIGHT_BODY_BYTES: String(256 * 1024),
      ASMX_MAX_BODY_BYTES: String(1024 * 1024),
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          port,
          host: '127.0.0.1',
          method: 'POST',
          path: '/AuthCodeSending.asmx',
          headers: { 'content-type': 'text/xml' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      // 8 chunks of 64 KB (under ASMX_MAX_BODY_BYTES, raised): past the 256 KB budget on the fifth.
      for (let i = 0; i < 8; i++) req.write(Buffer.alloc(64 * 1024, 'x'));
      req.end();
    });
    expect(status).toBe(503);
    expect(await t.app.history.count()).toBe(0);
  });
});
