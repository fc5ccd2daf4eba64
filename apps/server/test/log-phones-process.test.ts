/**
 * No whole phone number in the server's log (issue 45, docs/security.md#phone-numbers-in-the-log):
 * the built server, run as a process at `debug`, takes AuthCode by every door a school's server
 * uses (SOAP, HTTP GET with the phone in the query string, HTTP POST) and a console search by
 * phone, sends the SMS to a gateway that refuses them naming the number, and stops; then its whole
 * output (stdout and stderr) is read for the numbers' digits and the codes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_HEADERS, TEST_ADMIN, waitUntil } from './helpers.js';
import { type ServerProcess, startServerProcess } from './server-process.js';
import { gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

const NS = 'http://tempuri.org/';

/**
 * The calls: each phone as a client types it, its code, and how it is shown masked. Secrets and
 * data overlap: the SOAP phone ends with its own code, the GET code is the phone's middle digits.
 */
const CALLS = {
  soap: { phone: '+447400104821', code: '104821', masked: '+44•••••••821' },
  get: { phone: '+44 7400 123456', code: '740012', masked: '%2B44•••••••456' },
  post: { phone: '+33 6 12 34 56 78', code: '561234', masked: '+33••••••678' },
  // An old client that leaves the + unencoded: the server reads a space, and refuses the number.
  getPlus: { phone: '+1 (555) 010-9876', code: '550109', masked: '+1•••••••876' },
} as const;

/** The national number's digits, any separators (up to 3 characters, `%20` included) between them. */
function digitsOf(phone: string): RegExp {
  const national = phone.replace(/\D/g, '').replace(/^(1|33|44)/, '');
  return new RegExp(national.split('').join(String.raw`\D{0,3}`));
}

/** A code as a whole token: not the digits of a longer number (a time, a port). */
const codeToken = (code: string) => new RegExp(String.raw`(?<!\d)${code}(?!\d)`);

describe('the server process’s log', () => {
  let gateway: SmsGateway;
  let server: ServerProcess;
  let output = '';

  beforeAll(async () => {
    gateway = await startSmsGateway();
    // It refuses every message, naming the number as Twilio does.
    gateway.refusing = 400;
    server = await startServerProcess({
      ...gatewayEnv(gateway),
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'json',
      SMS_ALLOWED_COUNTRIES: 'GB,FR,US',
      AUTHCODE_LIMIT_PER_PHONE: 'off',
      AUTHCODE_LIMIT_PER_IP: 'off',
      AUTHCODE_LIMIT_PER_RANGE: 'off',
      ASMX_LIMIT_PER_IP: 'off',
    });
    const { url } = server;
    gateway.refusal = JSON.stringify({
      code: 21211,
      message: `The 'To' number ${CALLS.soap.phone} is not a valid phone number.`,
    });
    const soap = await fetch(`${url}/AuthCodeSending.asmx`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
      body:
        '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>' +
        `<AuthCode xmlns="${NS}"><code>${CALLS.soap.code}</code><phone>${CALLS.soap.phone}</phone></AuthCode>` +
        '</soap:Body></soap:Envelope>',
    });
    expect(soap.status).toBe(200);
    const get = await fetch(
      `${url}/AuthCodeSending.asmx/AuthCode?code=${CALLS.get.code}&phone=${encodeURIComponent(CALLS.get.phone)}`,
    );
    expect(get.status).toBe(200);
    const post = await fetch(`${url}/AuthCodeSending.asmx/AuthCode`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `code=${CALLS.post.code}&phone=${encodeURIComponent(CALLS.post.phone)}`,
    });
    expect(post.status).toBe(200);
    const plus = await fetch(
      `${url}/AuthCodeSending.asmx/AuthCode?code=${CALLS.getPlus.code}&phone=${CALLS.getPlus.phone.replaceAll(' ', '%20')}`,
    );
    await plus.arrayBuffer();
    // Staff looking a number up: History's filter and the privacy report carry it in the query.
    const login = await fetch(`${url}/api/session`, {
      method: 'POST',
      headers: { ...CONSOLE_HEADERS, origin: url, 'content-type': 'application/json' },
      body: JSON.stringify(TEST_ADMIN),
    });
    expect(login.status).toBe(200);
    const cookie = login.headers
      .getSetCookie()
      .find((c) => c.startsWith('session='))
      ?.split(';')[0] as string;
    for (const path of ['/api/calls?phone=', '/api/privacy/report?phone='])
      await (
        await fetch(`${url}${path}${encodeURIComponent(CALLS.soap.phone)}`, { headers: { cookie } })
      ).arrayBuffer();
    // The codes taken went to the gateway, which refused each; a stop lets the attempts under
    // way finish and be logged.
    await waitUntil(() => gateway.requests >= 3, { what: 'the SMS attempts' });
    await server.stop();
    output = server.output();
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await gateway?.close();
  });

  it('holds no whole phone number, by any door, in any spelling', () => {
    expect(output.length).toBeGreaterThan(1000);
    for (const [door, call] of Object.entries(CALLS)) {
      expect(output, door).not.toMatch(digitsOf(call.phone));
      expect(output, door).not.toContain(call.phone.replace(/\D/g, ''));
    }
  });

  it('shows each number’s country code and last three digits where it was logged', () => {
    // The GET's URL, encoded as it came.
    expect(output).toContain(`phone=${CALLS.get.masked}`);
    // The + left unencoded (a space to the server): the URL shows it as it came, masked.
    expect(output).toContain(`phone=${CALLS.getPlus.masked}`);
    // Staff's searches by number.
    expect(output).toContain('/api/calls?phone=%2B44•••••••821');
    expect(output).toContain('/api/privacy/report?phone=%2B44•••••••821');
  });

  it('keeps the auth codes masked, though their digits are the numbers’', () => {
    expect(output).toContain('code=***');
    for (const [door, call] of Object.entries(CALLS)) expect(output, door).not.toMatch(codeToken(call.code));
  });

  it('stays one JSON object a line', () => {
    for (const line of output.split('\n').filter(Boolean)) expect(() => JSON.parse(line), line).not.toThrow();
  });
});
