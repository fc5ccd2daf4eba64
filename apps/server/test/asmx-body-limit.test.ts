/**
 * The `.asmx` body cap (ASMX_MAX_BODY_BYTES, 64 KiB by default), apart from the console's API
 * (MAX_BODY_BYTES): the operations take a few short strings, and every byte read is parsed,
 * masked and recorded (docs/security.md#limits, docs/faults.md).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastCall, startTestApp, type TestApp } from './helpers.js';

const NS = 'http://tempuri.org/';
const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';
const CAP = 64 * 1024;
const PHONE = '+447911123456';
const SOAP11 = { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` };
const SOAP12 = { 'content-type': `application/soap+xml; charset=utf-8; action="${NS}AuthCode"` };
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** A SOAP AuthCode envelope of exactly `size` bytes, padded by an element the operation ignores. */
function envelope(size: number, env = S11): Buffer {
  const head = `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${env}"><soap:Body><AuthCode xmlns="${NS}"><code>4821</code><phone>${PHONE}</phone><note>`;
  const tail = '</note></AuthCode></soap:Body></soap:Envelope>';
  return Buffer.from(head + 'x'.repeat(size - head.length - tail.length) + tail);
}

/** An HTTP POST AuthCode form of exactly `size` bytes. */
function form(size: number): string {
  const head = `code=4821&phone=${encodeURIComponent(PHONE)}&note=`;
  return head + 'x'.repeat(size - head.length);
}

const tooLarge = (limit: number) => `The request body is larger than the limit of ${limit} bytes.`;

interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/**
 * POSTs over a real connection; `write` sends the body its own way. Resolves with the answer, or
 * rejects after `ms` (a server still waiting for the body).
 */
function rawPost(
  url: string,
  headers: Record<string, string | number>,
  write: (req: http.ClientRequest, answered: () => boolean) => Promise<void> | void,
  ms = 5000,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer within ${ms} ms`));
    }, ms);
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
      });
    });
    // The server answers and closes before the whole body is written: the writes may fail.
    req.on('error', () => {});
    void write(req, () => answered);
  });
}

describe('the .asmx body cap', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  it('refuses a SOAP 1.1 envelope one byte over 64 KiB: 413, a Client fault naming the limit, recorded', async () => {
    const before = await t.app.history.count();
    const res = await t.app.inject({
      method: 'POST',
      url: '/AuthCodeSending.asmx',
      headers: SOAP11,
      payload: envelope(CAP + 1),
    });
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toBe('text/xml; charset=utf-8');
    expect(res.body).toContain(
      `<faultcode>soap:Client</faultcode><faultstring>${tooLarge(CAP)}</faultstring>`,
    );
    expect(await t.app.history.count()).toBe(before + 1);
    expect(await lastCall(t.app)).toMatchObject({
      binding: 'soap11',
      group_name: 'AuthCodeSending',
      outcome: 'client-error',
      status: 413,
      error: tooLarge(CAP),
    });
  });

  it('refuses a SOAP 1.2 envelope over the cap with a Sender fault, recorded', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/AuthCodeSending.asmx',
      headers: SOAP12,
      payload: envelope(CAP + 1, S12),
    });
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toBe('application/soap+xml; charset=utf-8');
    expect(res.body).toContain('<soap:Value>soap:Sender</soap:Value>');
    expect(res.body).toContain(tooLarge(CAP));
    expect(await lastCall(t.app)).toMatchObject({ binding: 'soap12', outcome: 'client-error', status: 413 });
  });

  it('refuses an HTTP POST form over the cap: 413 in plain text, recorded', async () => {
    const before = await t.app.history.count();
    const res = await t.app.inject({
      method: 'POST',
      url: '/AuthCodeSending.asmx/AuthCode',
      headers: FORM,
      payload: form(CAP + 1),
    });
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toBe(tooLarge(CAP));
    expect(await t.app.history.count()).toBe(before + 1);
    expect(await lastCall(t.app)).toMatchObject({
      binding: 'http-post',
      outcome: 'client-error',
      status: 413,
    });
  });

  it('takes a 60 KiB envelope and a 60 KiB form: not refused for their size', async () => {
    const soap = await t.app.inject({
      method: 'POST',
      url: '/AuthCodeSending.asmx',
      headers: SOAP11,
      payload: envelope(60 * 1024),
    });
    expect(soap.statusCode).toBe(200);
    expect(soap.body).toContain(`<AuthCodeResponse xmlns="${NS}" />`);
    const post = await t.app.inject({
      method: 'POST',
      url: '/AuthCodeSending.asmx/AuthCode',
      headers: FORM,
      payload: form(60 * 1024),
    });
    expect(post.statusCode).toBe(200);
    expect(await lastCall(t.app)).toMatchObject({ binding: 'http-post', outcome: 'ok', status: 200 });
  });

  it('refuses a form of more than 1 000 fields as ASP.NET did, recording its first 4 KiB', async () => {
    /** AuthCode's two fields, then `extra` more. */
    const fields = (extra: number) =>
      `code=4821&phone=${encodeURIComponent('+447400123456')}${'&field=1'.repeat(extra)}`;
    const post = (payload: string) =>
      t.app.inject({ method: 'POST', url: '/AuthCodeSending.asmx/AuthCode', headers: FORM, payload });
    // A thousand fields are read as ever.
    expect((await post(fields(998))).statusCode).toBe(200);

    const before = await t.app.history.count();
    const res = await post(fields(999));
    expect(res.statusCode).toBe(500);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toBe('Operation is not valid due to the current state of the object.\r\n');
    expect(await t.app.history.count()).toBe(before + 1);
    const call = await lastCall(t.app);
    expect(call).toMatchObject({
      binding: 'http-post',
      outcome: 'client-error',
      status: 500,
      error: 'Request format is invalid: the form has more than 1000 fields (an operation takes at most 3).',
    });
    const detail = (await t.inject({ method: 'GET', url: `/api/calls/${call.id}` })).json();
    expect(detail.request).toContain('code=***&phone=%2B447400123456&field=1');
    expect(detail.request).toMatch(/\[… \d+ more characters not recorded\]$/);
    expect(detail.request).not.toMatch(/\b4821\b/);
  });

  it('counts a chunked body (no Content-Length) as it arrives, and refuses it past the cap', async () => {
    const before = await t.app.history.count();
    const chunk = Buffer.alloc(8 * 1024, 'x');
    const res = await rawPost(`${base}/AuthCodeSending.asmx`, SOAP11, async (req, answered) => {
      // Up to 1 MiB in 8 KiB chunks, stopping once the server has answered.
      for (let i = 0; i < 128 && !answered() && !req.destroyed; i++) {
        await new Promise<void>((resolve) => req.write(chunk, () => resolve()));
      }
      req.end();
    });
    expect(res.headers['transfer-encoding']).toBeUndefined();
    expect(res.status).toBe(413);
    expect(res.text).toContain(`<faultcode>soap:Client</faultcode><faultstring>${tooLarge(CAP)}`);
    expect(await t.app.history.count()).toBe(before + 1);
    expect(await lastCall(t.app)).toMatchObject({ binding: 'soap11', status: 413 });
  });

  it('refuses a body announcing more than the cap before reading any of it, and closes the connection', async () => {
    const before = await t.app.history.count();
    // Under the API's limit, over the .asmx one; not a byte of it is sent.
    const res = await rawPost(
      `${base}/AuthCodeSending.asmx/AuthCode`,
      { ...FORM, 'content-length': 512 * 1024 },
      (req) => req.flushHeaders(),
    );
    expect(res.status).toBe(413);
    expect(res.headers.connection).toBe('close');
    expect(res.text).toBe(tooLarge(CAP));
    expect(await t.app.history.count()).toBe(before + 1);
    expect(await lastCall(t.app)).toMatchObject({ binding: 'http-post', status: 413 });
  });

  it("leaves the console's API at MAX_BODY_BYTES: a 100 KB template is judged on its fields, not refused for size", async () => {
    const big = await t.inject({
      method: 'POST',
      url: '/api/templates',
      payload: { type: 'NEWS', title: 'News', body: 'x'.repeat(100_000) },
    });
    expect(big.statusCode).toBe(400);
    expect(big.json().errors).toHaveProperty('body');
    const huge = await t.inject({
      method: 'POST',
      url: '/api/templates',
      payload: { type: 'NEWS', title: 'News', body: 'x'.repeat(t.config.MAX_BODY_BYTES) },
    });
    expect(huge.statusCode).toBe(413);
  });
});

describe('ASMX_MAX_BODY_BYTES', () => {
  it('raises the cap for a deployment whose clients send more', async () => {
    const limit = 256 * 1024;
    const t = await startTestApp({ ASMX_MAX_BODY_BYTES: String(limit) });
    try {
      const taken = await t.app.inject({
        method: 'POST',
        url: '/AuthCodeSending.asmx',
        headers: SOAP11,
        payload: envelope(200 * 1024),
      });
      expect(taken.statusCode).toBe(200);
      const refused = await t.app.inject({
        method: 'POST',
        url: '/AuthCodeSending.asmx',
        headers: SOAP11,
        payload: envelope(limit + 1),
      });
      expect(refused.statusCode).toBe(413);
      expect(refused.body).toContain(tooLarge(limit));
      expect(await lastCall(t.app)).toMatchObject({ status: 413, error: tooLarge(limit) });
    } finally {
      await t.close();
    }
  });
});
