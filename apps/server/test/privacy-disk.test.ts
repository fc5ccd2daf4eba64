/**
 * An erased number is gone from the disk, not only from queries (issue 45): on SQLite every file of
 * DATA_DIR — the database, its write-ahead log and shared memory, the books, the key — is read as
 * bytes once the erasure has returned, and again once the server has stopped, and none holds the
 * number's digits in any spelling. The calls came over SOAP, HTTP GET and POST and the console's
 * Send, with a gateway that refused them naming the number and a fallback that sent them, and codes
 * whose digits the number holds (masked where they stand, never inside the number).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PrivacyErasure } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, tempDataDir, waitUntil } from './helpers.js';
import { fallbackGatewayEnv, gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

/** Digits no other data of the test has: the E.164 digits, the national ones, the national number. */
const PHONE = '+447458913276';
const DIGIT_STRINGS = ['447458913276', '07458913276', '7458913276'];
/** Any spelling: the digits with up to three other bytes between them. */
const ANY_SPELLING =
  /7[^0-9]{0,3}4[^0-9]{0,3}5[^0-9]{0,3}8[^0-9]{0,3}9[^0-9]{0,3}1[^0-9]{0,3}3[^0-9]{0,3}2[^0-9]{0,3}7[^0-9]{0,3}6/;

const NS = 'http://tempuri.org/';
const soap = (code: string, phone: string) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>` +
  `<AuthCode xmlns="${NS}"><code>${code}</code><phone>${phone}</phone></AuthCode></soap:Body></soap:Envelope>`;

/** Every file under `dir`, recursively, with its bytes. */
function everyFile(dir: string): { file: string; bytes: Buffer }[] {
  const out: { file: string; bytes: Buffer }[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...everyFile(file));
    else if (entry.isFile()) out.push({ file, bytes: fs.readFileSync(file) });
  }
  return out;
}

/** The files of `dir` that hold the number, and how. */
function holding(dir: string): string[] {
  const found: string[] = [];
  for (const { file, bytes } of everyFile(dir)) {
    const name = path.relative(dir, file);
    const text = bytes.toString('latin1');
    for (const digits of DIGIT_STRINGS) if (text.includes(digits)) found.push(`${name}: ${digits}`);
    const utf16 = bytes.toString('utf16le');
    for (const digits of DIGIT_STRINGS) if (utf16.includes(digits)) found.push(`${name}: ${digits} (UTF-16)`);
    const spelled = ANY_SPELLING.exec(text);
    if (spelled) found.push(`${name}: ${JSON.stringify(spelled[0])}`);
  }
  return found;
}

describe('an erased number on SQLite’s disk', () => {
  const data = tempDataDir();
  let t: TestApp;
  let gateway: SmsGateway;
  let fallback: SmsGateway;
  let erased: PrivacyErasure;

  beforeAll(async () => {
    gateway = await startSmsGateway();
    fallback = await startSmsGateway();
    gateway.refusing = 503;
    gateway.refusal = JSON.stringify({ error: 'number {to} is unreachable just now' });
    t = await startTestApp(
      { ...gatewayEnv(gateway), ...fallbackGatewayEnv(fallback), DEFAULT_PHONE_REGION: 'GB' },
      data.dir,
    );
    const { app } = t;
    const ok = (res: { statusCode: number; body: string }) => expect(res.statusCode, res.body).toBe(200);
    // Codes whose digits the number holds, over every binding.
    ok(
      await app.inject({
        method: 'POST',
        url: '/AuthCodeSending.asmx',
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
        payload: soap('3276', PHONE),
      }),
    );
    ok(
      await app.inject({
        method: 'POST',
        url: '/AuthCodeSending.asmx',
        headers: { 'content-type': `application/soap+xml; charset=utf-8; action="${NS}AuthCode"` },
        payload: soap('913276', '07458 913276').replace(
          'http://schemas.xmlsoap.org/soap/envelope/',
          'http://www.w3.org/2003/05/soap-envelope',
        ),
      }),
    );
    ok(
      await app.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode?code=7458&phone=07458913276' }),
    );
    ok(
      await app.inject({
        method: 'POST',
        url: '/AuthCodeSending.asmx/AuthCode',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'code=8810&phone=%2B44+7458+913276',
      }),
    );
    ok(
      await t.inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: '1327', phone: '0044 7458-913276' },
      }),
    );
    // A book, so that DATA_DIR holds one.
    ok(
      await t.inject({
        method: 'PUT',
        url: '/api/books/2026-1/7B',
        headers: { 'content-type': 'application/pdf' },
        payload: Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(2000, 'x')]),
      }),
    );
    await waitUntil(() => fallback.sent.length >= 5, { what: 'every code sent by the fallback' });
    await t.app.outbox.idle();
    // Before: the number is on the disk (the test can see it).
    expect(holding(data.dir).length).toBeGreaterThan(0);
    const res = await t.inject({
      method: 'POST',
      url: '/api/privacy/erase',
      payload: { phone: '07458 913276' },
    });
    expect(res.statusCode, res.body).toBe(200);
    erased = res.json() as PrivacyErasure;
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await fallback?.close();
    data.remove();
  });

  it('erases every call and delivery, and truncates the write-ahead log', () => {
    expect(erased).toMatchObject({ calls: 5, deliveries: 5, cancelled: 0, audit: 1 });
    expect(erased.attempts).toBeGreaterThanOrEqual(1);
    expect(erased.disk).toEqual({ walTruncated: true, vacuumed: [] });
  });

  it('leaves no file of DATA_DIR holding the number once the erasure returns', () => {
    expect(holding(data.dir)).toEqual([]);
  });

  it('nor once the server has stopped', async () => {
    await t.close();
    const files = everyFile(data.dir).map((f) => path.relative(data.dir, f.file));
    expect(files).toContain('school-messaging.db');
    expect(files.some((f) => f.startsWith('books'))).toBe(true);
    expect(holding(data.dir)).toEqual([]);
  });
});
