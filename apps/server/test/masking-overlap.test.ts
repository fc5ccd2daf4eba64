/**
 * A code whose characters another value holds (`4821` and the phone `+447400104821`: about one
 * AuthCode in a thousand with 4-digit codes) is masked where it stands, never inside that value:
 * the phone is recorded exactly as sent, in the parameters, the note, the request and answer
 * texts and History's phone column, so the Phone filter finds the call
 * (docs/security.md#what-is-masked-and-where). The code itself is still nowhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CallDetail, CallList } from '@school/contract';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

const CODE = '4821';
const PHONE = '+447400104821';
const NS = 'http://tempuri.org/';
/** The code as a value of its own: no letter or digit against either end. */
const WHOLE_CODE = /(?<![A-Za-z0-9])4821(?![A-Za-z0-9])/;

const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';

const envelope = (phone: string, soap12 = false) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${soap12 ? S12 : S11}"><soap:Body>` +
  `<AuthCode xmlns="${NS}"><code>${CODE}</code><phone>${phone}</phone></AuthCode></soap:Body></soap:Envelope>`;

const REQUESTS: readonly (readonly [string, InjectOptions, string])[] = [
  [
    'HTTP GET',
    {
      method: 'GET',
      url: `/AuthCodeSending.asmx/AuthCode?code=${CODE}&phone=%2B447400104821&memo=x4821`,
    },
    'code=***&phone=%2B447400104821&memo=x4821',
  ],
  [
    'HTTP POST',
    {
      method: 'POST',
      url: '/AuthCodeSending.asmx/AuthCode',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `phone=%2B447400104821&code=${CODE}`,
    },
    'phone=%2B447400104821&code=***',
  ],
  [
    'SOAP 1.1',
    {
      method: 'POST',
      url: '/AuthCodeSending.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
      payload: envelope(PHONE),
    },
    `<code>***</code><phone>${PHONE}</phone>`,
  ],
  [
    'SOAP 1.2, the phone national',
    {
      method: 'POST',
      url: '/AuthCodeSending.asmx',
      headers: { 'content-type': `application/soap+xml; charset=utf-8; action="${NS}AuthCode"` },
      payload: envelope('07400104821', true),
    },
    '<code>***</code><phone>07400104821</phone>',
  ],
];

describe.each(DIALECTS)('a code whose characters the phone holds (%s)', (dialect) => {
  let t: TestApp;
  const ids: Record<string, number> = {};

  const send = async (request: InjectOptions) => {
    const res = await t.app.inject(request);
    const [call] = await t.app.history.list({ limit: 1 });
    return { status: res.statusCode, body: res.body, id: call?.id as number };
  };
  const detail = async (id: number) => {
    const res = await t.inject({ method: 'GET', url: `/api/calls/${id}` });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as CallDetail;
  };
  const list = async (query: string) => {
    const res = await t.inject({ method: 'GET', url: `/api/calls?${query}` });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as CallList).items.map((c) => c.id);
  };
  /** The code as a value of its own in none of what the call page shows. */
  const expectNoCode = (call: CallDetail) => {
    for (const text of [
      call.request,
      call.response,
      call.note ?? '',
      call.error ?? '',
      JSON.stringify(call.params),
    ])
      expect(text).not.toMatch(WHOLE_CODE);
    expect(call.params?.code).toBe('***');
  };

  beforeAll(async () => {
    t = await startTestAppOn(dialect, { DEFAULT_PHONE_REGION: 'GB', SMS_ALLOWED_COUNTRIES: 'GB' });
    for (const [name, request] of REQUESTS) {
      const sent = await send(request);
      expect(sent.status, `${name}: ${sent.body}`).toBe(200);
      ids[name] = sent.id;
    }
  });
  afterAll(() => t?.close());

  it.each(REQUESTS)(
    '%s: recorded with the phone exactly as sent, the code masked',
    async (name, _, asSent) => {
      const call = await detail(ids[name] as number);
      expect(call.params).toEqual({ code: '***', phone: PHONE });
      expect(call.note).toBe(`SMS queued to ${PHONE}.`);
      expect(call.request).toContain(asSent);
      expectNoCode(call);
    },
  );

  it("is found by History's Phone filter, whichever way staff write the number", async () => {
    const all = REQUESTS.map(([name]) => ids[name] as number).reverse();
    expect(await list(`phone=${encodeURIComponent(PHONE)}`)).toEqual(all);
    expect(await list(`phone=${encodeURIComponent('07400 104821')}`)).toEqual(all);
    const count = await t.inject({ method: 'GET', url: '/api/calls/count?phone=07400104821' });
    expect(count.json()).toEqual({ count: all.length, more: false });
  });

  it('keeps a refused phone holding the code as sent in the error and the answer', async () => {
    const tooLong = '+4474001048210';
    const sent = await send({
      method: 'GET',
      url: `/AuthCodeSending.asmx/AuthCode?code=${CODE}&phone=${encodeURIComponent(tooLong)}`,
    });
    expect(sent.status).toBe(400);
    expect(sent.body).toContain(tooLong);
    const call = await detail(sent.id);
    expect(call.params).toEqual({ code: '***', phone: tooLong });
    expect(call.error).toContain(`'${tooLong}'`);
    expect(call.response).toContain(`'${tooLong}'`);
    expect(call.request).toContain('code=***&phone=%2B4474001048210');
    expectNoCode(call);
    // Found by free text, the way a refused phone is.
    expect(await list('q=4474001048210')).toEqual([sent.id]);
  });

  // On PostgreSQL the records are not in DATA_DIR: the call page above is what they hold.
  it.runIf(dialect === 'sqlite')('leaves the code in no file of DATA_DIR', async () => {
    const files = fs
      .readdirSync(t.dataDir, { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile())
      .map((e) => fs.readFileSync(path.join(e.parentPath, e.name)).toString('latin1'));
    expect(files.length).toBeGreaterThan(0);
    for (const bytes of files) {
      expect(bytes).not.toContain(`<code>${CODE}</code>`);
      expect(bytes).not.toContain(`code=${CODE}`);
    }
  });
});
