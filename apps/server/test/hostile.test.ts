import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastCall, startTestApp, type TestApp } from './helpers.js';

const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const NS = 'http://tempuri.org/';
const soapHeaders = { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` };

describe('hostile input', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  async function expectFaultRecorded(
    payload: string | Buffer,
    headers: Record<string, string>,
    text: RegExp,
    binding = 'soap11',
  ) {
    const before = await t.app.history.count();
    const res = await t.app.inject({ method: 'POST', url: '/AuthCodeSending.asmx', headers, payload });
    expect(res.statusCode).toBe(500);
    expect(res.headers['content-type']).toBe(
      binding === 'soap11' ? 'text/xml; charset=utf-8' : 'application/soap+xml; charset=utf-8',
    );
    expect(res.body).toMatch(/<soap:Fault>/);
    expect(res.body).toMatch(text);
    expect(await t.app.history.count()).toBe(before + 1);
    expect(await lastCall(t.app)).toMatchObject({ binding, outcome: 'client-error', status: 500 });
    return res;
  }

  /**
   * XML that cannot be read: ASMX's 400 with an empty body and the version's content type; the
   * record keeps the precise reason (docs/faults.md#reading-the-request).
   */
  async function expectUnreadableRecorded(
    payload: string | Buffer,
    headers: Record<string, string>,
    reason: RegExp,
    binding = 'soap11',
  ) {
    const before = await t.app.history.count();
    const res = await t.app.inject({ method: 'POST', url: '/AuthCodeSending.asmx', headers, payload });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe(
      binding === 'soap11' ? 'text/xml; charset=utf-8' : 'application/soap+xml; charset=utf-8',
    );
    expect(res.body).toBe('');
    expect(await t.app.history.count()).toBe(before + 1);
    const row = await lastCall(t.app);
    expect(row).toMatchObject({ binding, outcome: 'client-error', status: 400 });
    expect(row.error).toMatch(reason);
    expect(row.note).toMatch(/empty body/);
    return row;
  }

  it('refuses a DOCTYPE with an external entity and never reads the file', async () => {
    const row = await expectUnreadableRecorded(
      `<?xml version="1.0"?><!DOCTYPE e [<!ENTITY x SYSTEM "file:///etc/passwd">]><soap:Envelope xmlns:soap="${S11}"><soap:Body><AuthCode xmlns="${NS}"><code>&x;</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>`,
      soapHeaders,
      /DOCTYPE and ENTITY declarations are not allowed in a SOAP message \(line 1, column 22\)/,
    );
    expect(JSON.stringify(row)).not.toContain('root:');
  });

  it('refuses billion laughs at once', async () => {
    const entities = Array.from(
      { length: 10 },
      (_, i) => `<!ENTITY l${i + 1} "${`&l${i};`.repeat(10)}">`,
    ).join('');
    await expectUnreadableRecorded(
      `<?xml version="1.0"?><!DOCTYPE z [<!ENTITY l0 "ha">${entities}]><soap:Envelope xmlns:soap="${S11}"><soap:Body>&l10;</soap:Body></soap:Envelope>`,
      soapHeaders,
      /DOCTYPE and ENTITY declarations are not allowed/,
    );
  });

  it('answers malformed XML with 400, the record saying where', async () => {
    await expectUnreadableRecorded(
      `<soap:Envelope xmlns:soap="${S11}"><soap:Body><AuthCode></soap:Body></soap:Envelope>`,
      soapHeaders,
      /There is an error in XML document \(1, \d+\)/,
    );
    await expectUnreadableRecorded(
      'not xml at all',
      { 'content-type': 'application/soap+xml' },
      /There is an error in XML document/,
      'soap12',
    );
    // Recorded under the operation its SOAPAction (or SOAP 1.2 action) names: what the caller
    // meant to call, so History shows "AuthCode", not an unknown operation.
    const named = await expectUnreadableRecorded('', soapHeaders, /Root element is missing/);
    expect(named.operation).toBe('AuthCode');
    const named12 = await expectUnreadableRecorded(
      'not xml',
      { 'content-type': `application/soap+xml; charset=utf-8; action="${NS}AuthCode"` },
      /There is an error in XML document/,
      'soap12',
    );
    expect(named12.operation).toBe('AuthCode');
    const unnamed = await expectUnreadableRecorded(
      '',
      { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}Nope"` },
      /Root element is missing/,
    );
    expect(unnamed.operation).toBeNull();
    await expectUnreadableRecorded(
      `<soap:Envelope xmlns:soap="${S11}"><soap:Body>${'<a>'.repeat(40)}${'</a>'.repeat(40)}</soap:Body></soap:Envelope>`,
      soapHeaders,
      /nests elements more than 32 deep/,
    );
  });

  it('keeps __proto__ elements harmless', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/AuthCodeSending.asmx',
      headers: soapHeaders,
      payload: `<soap:Envelope xmlns:soap="${S11}"><soap:Body><AuthCode xmlns="${NS}"><__proto__><isAdmin>true</isAdmin></__proto__><constructor><prototype>x</prototype></constructor><code>1</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>`,
    });
    expect(res.statusCode).toBe(200);
    expect(({} as { isAdmin?: unknown }).isAdmin).toBeUndefined();
    expect(JSON.parse((await lastCall(t.app)).params ?? '')).toEqual({ code: '***', phone: '+447911123456' });
  });

  it('answers wrong content types as ASMX did, the record naming the type', async () => {
    // SOAP: 415 with an empty body.
    for (const type of ['application/json', 'text/plain', undefined]) {
      const before = await t.app.history.count();
      const res = await t.app.inject({
        method: 'POST',
        url: '/AuthCodeSending.asmx',
        headers: type ? { 'content-type': type } : {},
        payload: '{"code":"1"}',
      });
      expect(res.statusCode).toBe(415);
      expect(res.headers['content-type']).toBe('text/xml; charset=utf-8');
      expect(res.body).toBe('');
      expect(await t.app.history.count()).toBe(before + 1);
      const row = await lastCall(t.app);
      expect(row.status).toBe(415);
      expect(row.error).toContain(type ?? 'no Content-Type');
    }
    // HTTP POST: ASMX's 500, its text naming the type (HTML-encoded, as ASMX wrote it).
    for (const type of ['application/json', 'text/xml; charset="utf-8"']) {
      const before = await t.app.history.count();
      const res = await t.app.inject({
        method: 'POST',
        url: '/AuthCodeSending.asmx/AuthCode',
        headers: { 'content-type': type },
        payload: '{"code":"1"}',
      });
      expect(res.statusCode).toBe(500);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.body).toBe(`Request format is invalid: ${type.replaceAll('"', '&quot;')}.\r\n`);
      expect(await t.app.history.count()).toBe(before + 1);
      const row = await lastCall(t.app);
      expect(row.status).toBe(500);
      expect(row.error).toContain(`Request format is invalid: ${type}.`);
    }
  });

  it('answers every unknown operation and SOAPAction in the caller binding, recorded', async () => {
    const cases = [
      {
        headers: { ...soapHeaders, soapaction: '"http://tempuri.org/DropTables"' },
        binding: 'soap11',
        text: 'Server did not recognize the value of HTTP Header SOAPAction: http://tempuri.org/DropTables.',
      },
      {
        headers: { ...soapHeaders, soapaction: '"http://tempuri.org/GetBookPdfByTerm"' },
        binding: 'soap11',
        text: 'Server did not recognize the value of HTTP Header SOAPAction: http://tempuri.org/GetBookPdfByTerm.',
      },
      {
        headers: { 'content-type': 'application/soap+xml; action="urn:nope"' },
        binding: 'soap12',
        text: "Unable to handle request. The action 'urn:nope' was not recognized.",
      },
    ];
    for (const c of cases) {
      const res = await expectFaultRecorded(
        `<soap:Envelope xmlns:soap="${c.binding === 'soap11' ? S11 : 'http://www.w3.org/2003/05/soap-envelope'}"><soap:Body><Nope xmlns="${NS}"/></soap:Body></soap:Envelope>`,
        c.headers,
        /Fault/,
        c.binding,
      );
      expect(res.body).toContain(c.text);
    }
    for (const method of ['GET', 'POST'] as const) {
      const res = await t.app.inject({ method, url: '/AuthCodeSending.asmx/%3Cscript%3E' });
      expect(res.statusCode).toBe(500);
      expect(res.body).toBe('&lt;script&gt; Web Service method name is not valid.\r\n');
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(await lastCall(t.app)).toMatchObject({
        binding: method === 'GET' ? 'http-get' : 'http-post',
        operation: null,
        status: 500,
        error: '<script> Web Service method name is not valid.',
      });
    }
    // A name that differs only in case: ASMX's text on the wire, the right name in the record.
    const wrongCase = await t.app.inject({ method: 'POST', url: '/AuthCodeSending.asmx/authCODE' });
    expect(wrongCase.statusCode).toBe(500);
    expect(wrongCase.body).toBe(
      'Invalid method name &#39;authCODE&#39;,  method names are case sensitive.   The method name &#39;AuthCode&#39; with the same name but different casing was found.\r\nParameter name: methodName\r\n',
    );
    expect((await lastCall(t.app)).error).toBe(
      'authCODE Web Service method name is not valid. Method names are case-sensitive: did you mean AuthCode?',
    );
  });

  it('refuses a 20 MB body with 413, records it, and stays up', async () => {
    const before = await t.app.history.count();
    const body = Buffer.alloc(20 * 1024 * 1024, 'a');
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        `${base}/AuthCodeSending.asmx`,
        { method: 'POST', headers: { ...soapHeaders, 'content-length': body.length } },
        (res) => {
          let data = '';
          res.on('data', (c) => {
            data += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: data }));
        },
      );
      // The server may answer and close before the whole body is written.
      req.on('error', reject);
      req.end(body);
    });
    expect(status).toBe(413);
    expect(text).toContain('The request body is larger than the limit of 65536 bytes.');
    expect(text).toContain('<faultcode>soap:Client</faultcode>');
    expect(await t.app.history.count()).toBe(before + 1);
    expect(await lastCall(t.app)).toMatchObject({ binding: 'soap11', outcome: 'client-error', status: 413 });
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
  });

  it('honours Expect: 100-continue, as .NET proxies send it', async () => {
    const body = Buffer.from(
      `<soap:Envelope xmlns:soap="${S11}"><soap:Body><pushNoti xmlns="${NS}"/></soap:Body></soap:Envelope>`,
    );
    const { status, continued, text } = await new Promise<{
      status: number;
      continued: boolean;
      text: string;
    }>((resolve, reject) => {
      let continued = false;
      const req = http.request(`${base}/PushNotificationMobile.asmx`, {
        method: 'POST',
        headers: {
          'content-type': 'text/xml; charset=utf-8',
          soapaction: '"http://tempuri.org/pushNoti"',
          expect: '100-continue',
          'content-length': body.length,
        },
      });
      // The body is sent only once the server says to continue.
      req.on('continue', () => {
        continued = true;
        req.end(body);
      });
      req.on('response', (res) => {
        let data = '';
        res.on('data', (c) => {
          data += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, continued, text: data }));
      });
      req.on('error', reject);
    });
    expect(continued).toBe(true);
    expect(status).toBe(200);
    expect(text).toContain('<pushNotiResponse xmlns="http://tempuri.org/" />');
  });

  it('answers other verbs with 405 and Allow', async () => {
    for (const [method, url] of [
      ['PUT', '/AuthCodeSending.asmx'],
      ['DELETE', '/AuthCodeSending.asmx/AuthCode'],
    ] as const) {
      const res = await t.app.inject({ method, url });
      expect(res.statusCode).toBe(405);
      expect(res.headers.allow).toBe('GET, POST');
      expect(await lastCall(t.app)).toMatchObject({ outcome: 'client-error', status: 405, operation: null });
    }
  });

  it('never runs an operation on HEAD: ASMX found no method for it (500)', async () => {
    const deliveries = () => t.app.store.db.selectFrom('deliveries').selectAll().execute();
    const before = (await deliveries()).length;
    const res = await t.app.inject({
      method: 'HEAD',
      url: '/AuthCodeSending.asmx/AuthCode?code=1&phone=%2B447911123456',
    });
    expect(res.statusCode).toBe(500);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toBe('');
    const row = await lastCall(t.app);
    expect(row).toMatchObject({ binding: 'http-get', outcome: 'client-error', status: 500, operation: null });
    expect(row.error).toMatch(/never runs on a HEAD/);
    expect(row.response).toContain('AuthCode Web Service method name is not valid.');
    expect(await deliveries()).toHaveLength(before);
  });

  it('does not leak internals when the store fails', async () => {
    const broken = await startTestApp();
    await broken.app.store.db.destroy();
    const res = await broken.app.inject({ method: 'GET', url: '/PushNotificationMobile.asmx/pushNoti' });
    expect(res.statusCode).toBe(500);
    expect(res.body).toBe(
      'Server was unable to process request. ---> The call could not be recorded; nothing was done.\r\n',
    );
    await broken.app.close().catch(() => {});
    broken.close().catch(() => {});
  });
});
