/**
 * Every example phone the product prints works where it is shown (issue 43): each number of the
 * README and docs/*.md, the operation table's example (which the console's Send shows and fills
 * in), the example the server's own error messages give, and any number the .asmx help pages, the
 * WSDL or the API's OpenAPI document show, is sent through AuthCode to a server with the default
 * setup of the number's region (DEFAULT_PHONE_REGION set to it, nothing else), and reaches a real
 * HTTP gateway. A Guernsey number printed as GB's example is refused there and fails this test.
 */
import fs from 'node:fs';
import path from 'node:path';
import { countryCallingCode, EXAMPLE_PHONE, operationByName, phoneKind } from '@school/contract';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers.js';
import { gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

const ROOT = path.join(import.meta.dirname, '../../..');

/**
 * Pages whose numbers are no examples to send: performance.md records the numbers a measurement
 * searched for, as they were. Lines that set a sender (TWILIO_FROM=…) name the school's own
 * number, not a parent's.
 */
const NOT_EXAMPLES = new Set(['docs/performance.md']);
const SENDER_LINE = /_FROM=/;

/**
 * Phone-looking numbers of a text: international (`+447400123456`, `+44 7400 123456`, the
 * `%2B447400123456` of a URL) and GB's national form (`07400 123456`, read in GB as the README
 * says). Too short to be a whole number (`+44`, `+870`) or not a number at all (`U+00A0`): left.
 */
function phonesIn(text: string): { phone: string; region: string | undefined }[] {
  const found: { phone: string; region: string | undefined }[] = [];
  for (const line of text.split('\n')) {
    if (SENDER_LINE.test(line)) continue;
    for (const m of line.matchAll(/(?<![\w+%])(?:\+|%2B)(\d[\d ]{6,16}\d)(?![\d])/g)) {
      const digits = (m[1] ?? '').replace(/ /g, '');
      if (digits.length >= 8 && digits.length <= 15)
        found.push({ phone: m[0].replace(/^%2B/, '+'), region: undefined });
    }
    for (const m of line.matchAll(/(?<![\w+])07\d{3} ?\d{6}(?!\d)/g))
      found.push({ phone: m[0], region: 'GB' });
  }
  return found;
}

/** Where each number was printed, by number. */
const printed = new Map<string, { where: string[]; region: string | undefined }>();
const add = (where: string, text: string) => {
  for (const { phone, region } of phonesIn(text)) {
    const entry = printed.get(phone) ?? { where: [], region };
    entry.where.push(where);
    printed.set(phone, entry);
  }
};

const pages = () => [
  'README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** One server per region, with its default setup and a gateway of its own. */
const servers = new Map<string, Promise<{ t: TestApp; gateway: SmsGateway }>>();
const serverFor = (region: string | undefined) => {
  const key = region ?? '';
  let server = servers.get(key);
  if (!server) {
    server = (async () => {
      const gateway = await startSmsGateway();
      const t = await startTestApp({
        ...gatewayEnv(gateway),
        ...(region ? { DEFAULT_PHONE_REGION: region } : {}),
      });
      return { t, gateway };
    })();
    servers.set(key, server);
  }
  return server;
};
afterAll(async () => {
  for (const server of servers.values()) {
    const { t, gateway } = await server;
    await t.close();
    await gateway.close();
  }
});

const soapAuthCode = (t: TestApp, phone: string) =>
  t.app.inject({
    method: 'POST',
    url: '/AuthCodeSending.asmx',
    headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
    payload:
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>' +
      `<AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>${phone}</phone></AuthCode></soap:Body></soap:Envelope>`,
  });

/**
 * The region a reader takes a printed number for. A +44 number is GB's (the README's
 * DEFAULT_PHONE_REGION=GB), a +1 number the US's, whatever territory sharing the code it may
 * belong to: a Guernsey number printed as a GB example is what this test is for. Any other
 * number: its own country.
 */
const READ_AS: Readonly<Record<string, string>> = { '44': 'GB', '1': 'US' };
const regionOf = (phone: string) => {
  const e164 = phone.replace(/ /g, '');
  return READ_AS[countryCallingCode(e164) ?? ''] ?? phoneKind(e164).country;
};

/** Sends `phone` as printed to its region's server; the E.164 numbers the gateway received. */
async function sendsAsPrinted(phone: string, region: string | undefined, where: string) {
  const home = region ?? regionOf(phone);
  expect(home, `${phone} (${where}) is a number of no country`).toBeDefined();
  const { t, gateway } = await serverFor(home);
  const res = await soapAuthCode(t, phone);
  const fault = /<faultstring>([^<]*)<\/faultstring>/.exec(res.body)?.[1];
  expect(fault, `${phone} (${where}) with DEFAULT_PHONE_REGION=${home}`).toBeUndefined();
  expect(res.statusCode).toBe(200);
  await t.app.outbox.idle();
  return gateway.sent.map((m) => m.to);
}

describe('every example phone printed', () => {
  it('of the README and docs/*.md is sent on the default setup of its region', async () => {
    for (const page of pages()) {
      if (!NOT_EXAMPLES.has(page)) add(page, fs.readFileSync(path.join(ROOT, page), 'utf8'));
    }
    // The README's SOAP example and its DEFAULT_PHONE_REGION line, docs/wire-contract.md's envelope.
    expect(printed.get('+447400123456')?.where).toEqual(
      expect.arrayContaining(['README.md', 'docs/wire-contract.md']),
    );
    expect(printed.get('07400 123456')?.where).toContain('README.md');
    for (const [phone, { where, region }] of printed) {
      const sent = await sendsAsPrinted(phone, region, where.join(', '));
      const e164 = `+${phone.replace(/\D/g, '').replace(/^0/, '44')}`;
      expect(sent, `${phone} (${where.join(', ')})`).toContain(e164);
    }
  });

  it('by the operation table, which the console shows and fills in, is a GB mobile sent on GB’s default setup', async () => {
    const example = operationByName('AuthCode')?.params.find((p) => p.name === 'phone')?.example;
    expect(example).toBe(EXAMPLE_PHONE);
    expect(phoneKind(EXAMPLE_PHONE).country).toBe('GB');
    expect(await sendsAsPrinted(EXAMPLE_PHONE, 'GB', 'the operation table')).toContain(EXAMPLE_PHONE);
  });

  it("in the server's own error message is sent on the setup that printed it", async () => {
    // No region (every country), and the default setups of three regions.
    for (const region of [undefined, 'GB', 'FR', 'US']) {
      const { t } = await serverFor(region);
      const refused = await t.app.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=12345',
      });
      expect(refused.statusCode).toBe(400);
      const example = /, e\.g\. (\+\d+)\.$/.exec(refused.body)?.[1];
      expect(example, refused.body).toBeDefined();
      if (region) expect(phoneKind(example as string).country).toBe(region);
      // Sent where it was printed; printed with no region, on the setup of the region it is of (GB).
      const sent = await sendsAsPrinted(
        example as string,
        region,
        `the error message of ${region ?? 'no region'}`,
      );
      expect(sent).toContain(example);
    }
  });

  it('on the .asmx help pages, the WSDL and the OpenAPI document is sent on the default setup of its region', async () => {
    const { t } = await serverFor('GB');
    const shown = new Map<string, string>();
    for (const url of [
      '/AuthCodeSending.asmx',
      '/AuthCodeSending.asmx?op=AuthCode',
      '/AuthCodeSending.asmx?wsdl',
      '/api/openapi.json',
    ]) {
      const res = await t.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      for (const { phone } of phonesIn(res.body)) shown.set(phone, url);
    }
    // Today they show ASMX's placeholder `string`, no number; a number they come to show is sent.
    for (const [phone, url] of shown) await sendsAsPrinted(phone, undefined, url);
  });
});
