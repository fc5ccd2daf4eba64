import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSmsProvider, providerConfigSchema, verifyTwilioSignature } from '../../src/providers/index.js';
import type { SmsMessage, SmsProvider } from '../../src/providers/types.js';
import { type FakeServer, refusedUrl, resultText, startFakeServer } from './fake-server.js';

const ACCOUNT_SID = `AC${'a1'.repeat(16)}`;
const AUTH_TOKEN = 'twilio-auth-token-0123456789abcdef';
const API_KEY_SID = `SK${'b2'.repeat(16)}`;
const API_KEY_SECRET = 'twilio-api-key-secret-fedcba9876543210';
const SERVICE_SID = `MG${'c3'.repeat(16)}`;
const MESSAGE_SID = `SM${'d4'.repeat(16)}`;

const message: SmsMessage = {
  to: '+447911123456',
  text: 'Your verification code is 4711 & more',
  idempotencyKey: 'delivery-42',
};

let fake: FakeServer;
beforeAll(async () => {
  fake = await startFakeServer();
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
  fake.answer(() => ({ status: 201, body: { sid: MESSAGE_SID, status: 'queued', body: message.text } }));
});

function twilio(env: Record<string, string> = {}): SmsProvider {
  return createSmsProvider(
    providerConfigSchema.parse({
      SMS_PROVIDER: 'twilio',
      TWILIO_BASE_URL: fake.url,
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      TWILIO_FROM: '+15005550006',
      ...env,
    }),
  );
}

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('Twilio: the request Twilio receives', () => {
  it('posts the message form to the account Messages.json with Basic auth (account SID + auth token)', async () => {
    const result = await twilio({ TWILIO_STATUS_CALLBACK_URL: 'https://sms.example.org/twilio/status' }).send(
      message,
    );

    expect(result).toEqual({
      ok: true,
      providerId: MESSAGE_SID,
      response: `HTTP 201: queued, sid ${MESSAGE_SID}`,
    });
    expect(fake.requests).toHaveLength(1);
    const [request] = fake.requests;
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`);
    expect(request?.headers.authorization).toBe(basic(ACCOUNT_SID, AUTH_TOKEN));
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request?.headers['i-twilio-idempotency-token']).toBe('delivery-42');
    expect(Object.fromEntries(new URLSearchParams(request?.body))).toEqual({
      To: '+447911123456',
      Body: 'Your verification code is 4711 & more',
      From: '+15005550006',
      StatusCallback: 'https://sms.example.org/twilio/status',
    });
  });

  it('authenticates with an API key SID and secret, and sends through a messaging service', async () => {
    const provider = twilio({
      TWILIO_AUTH_TOKEN: '',
      TWILIO_FROM: '',
      TWILIO_API_KEY_SID: API_KEY_SID,
      TWILIO_API_KEY_SECRET: API_KEY_SECRET,
      TWILIO_MESSAGING_SERVICE_SID: SERVICE_SID,
    });
    expect((await provider.send(message)).ok).toBe(true);

    const [request] = fake.requests;
    // The path names the account; the credentials are the key's.
    expect(request?.url).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`);
    expect(request?.headers.authorization).toBe(basic(API_KEY_SID, API_KEY_SECRET));
    expect(Object.fromEntries(new URLSearchParams(request?.body))).toEqual({
      To: message.to,
      Body: message.text,
      MessagingServiceSid: SERVICE_SID,
    });
  });

  it('sends the same idempotency token on a retry of the same delivery', async () => {
    const provider = twilio();
    await provider.send(message);
    await provider.send(message);
    expect(fake.requests.map((r) => r.headers['i-twilio-idempotency-token'])).toEqual([
      'delivery-42',
      'delivery-42',
    ]);
  });

  it('keeps the message text (the auth code) out of the recorded response', async () => {
    const result = await twilio().send(message);
    expect(resultText(result)).not.toContain('4711');
  });

  it('describes itself without credentials', () => {
    const description = twilio().describe();
    expect(description).toContain('+15005550006');
    expect(description).not.toContain(AUTH_TOKEN);
  });
});

describe('Twilio: classification of answers', () => {
  const error = (code: number, status: number) => ({
    code,
    message: `Twilio says ${code}`,
    more_info: `https://www.twilio.com/docs/errors/${code}`,
    status,
  });

  it.each([
    [21211, 400],
    [21610, 400],
    [30003, 400],
    [30006, 400],
    [20003, 401],
    [20404, 404],
    [21606, 400],
  ])('error %i (HTTP %i) is permanent', async (code, status) => {
    fake.answer(() => ({ status, body: error(code, status) }));
    const result = await twilio().send(message);
    expect(result).toMatchObject({ ok: false, kind: 'permanent', status });
    expect(result.ok || result.error).toBe(`Twilio error ${code}: Twilio says ${code} (HTTP ${status})`);
    expect(result.ok || result.retryAfterMs).toBeUndefined();
  });

  it('20429 with 429 and Retry-After: 7 is transient after 7 s', async () => {
    fake.answer(() => ({ status: 429, headers: { 'Retry-After': '7' }, body: error(20429, 429) }));
    expect(await twilio().send(message)).toMatchObject({
      ok: false,
      kind: 'transient',
      retryAfterMs: 7000,
      status: 429,
      error: 'Twilio error 20429: Twilio says 20429 (HTTP 429)',
    });
  });

  it('a bare 429 with an HTTP-date Retry-After is transient until that date', async () => {
    const at = new Date(Date.now() + 30_000);
    at.setMilliseconds(0);
    fake.answer(() => ({ status: 429, headers: { 'Retry-After': at.toUTCString() } }));
    const result = await twilio().send(message);
    expect(result).toMatchObject({ ok: false, kind: 'transient', status: 429 });
    const wait = result.ok ? 0 : (result.retryAfterMs ?? 0);
    expect(wait).toBeGreaterThan(25_000);
    expect(wait).toBeLessThanOrEqual(30_000);
  });

  it.each([500, 502, 503])('HTTP %i is transient, honouring Retry-After when given', async (status) => {
    fake.answer(() => ({ status, body: '<html>Service Unavailable</html>' }));
    const plain = await twilio().send(message);
    expect(plain).toMatchObject({
      ok: false,
      kind: 'transient',
      status,
      response: '<html>Service Unavailable</html>',
    });
    expect(plain.ok || plain.retryAfterMs).toBeUndefined();

    fake.answer(() => ({ status, headers: { 'Retry-After': '2' }, body: error(20500, status) }));
    expect(await twilio().send(message)).toMatchObject({ ok: false, kind: 'transient', retryAfterMs: 2000 });
  });

  it('a listed permanent code stays permanent even on a 5xx', async () => {
    fake.answer(() => ({ status: 503, body: error(21610, 503) }));
    expect(await twilio().send(message)).toMatchObject({ ok: false, kind: 'permanent' });
  });

  it('no answer within PROVIDER_TIMEOUT_MS is transient', async () => {
    fake.answer(() => ({ status: 201, body: {}, delayMs: 1500 }));
    const result = await twilio({ PROVIDER_TIMEOUT_MS: '200' }).send(message);
    expect(result).toEqual({
      ok: false,
      kind: 'transient',
      error: 'Twilio: no answer within 200 ms',
      taken: 'unknown',
    });
  });

  it('connection refused is transient', async () => {
    const result = await twilio({ TWILIO_BASE_URL: await refusedUrl() }).send(message);
    expect(result).toEqual({
      ok: false,
      kind: 'transient',
      error: 'Twilio: connection refused (ECONNREFUSED)',
      taken: 'no',
    });
  });

  it('an abort from the dispatcher is transient', async () => {
    fake.answer(() => ({ status: 201, body: {}, delayMs: 1500 }));
    const result = await twilio().send(message, AbortSignal.timeout(100));
    expect(result).toEqual({
      ok: false,
      kind: 'transient',
      error: 'Twilio: request aborted',
      taken: 'unknown',
    });
  });

  it('never records the auth token, the API key secret or the Authorization header', async () => {
    // A hostile or buggy answer echoing the request's credentials.
    fake.answer((request) => {
      const authorization = request.headers.authorization ?? '';
      const decoded = Buffer.from(authorization.replace(/^Basic /, ''), 'base64').toString();
      const password = decoded.slice(decoded.indexOf(':') + 1);
      return { status: 401, body: { code: 20003, message: `Authenticate ${authorization} (${password})` } };
    });
    for (const provider of [
      twilio(),
      twilio({ TWILIO_API_KEY_SID: API_KEY_SID, TWILIO_API_KEY_SECRET: API_KEY_SECRET }),
    ]) {
      const result = await provider.send(message);
      expect(result).toMatchObject({ ok: false, kind: 'permanent' });
      const text = resultText(result);
      expect(text).toContain('[redacted]');
      expect(text).not.toContain(AUTH_TOKEN);
      expect(text).not.toContain(API_KEY_SECRET);
      expect(text).not.toContain(Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64'));
      expect(text).not.toContain(Buffer.from(`${API_KEY_SID}:${API_KEY_SECRET}`).toString('base64'));
    }
  });

  it('truncates a long answer to about 500 characters', async () => {
    fake.answer(() => ({ status: 400, body: { code: 21211, message: 'x'.repeat(5000) } }));
    const result = await twilio().send(message);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.response?.length).toBeLessThan(600);
      expect(result.error.length).toBeLessThan(600);
    }
  });
});

describe('verifyTwilioSignature', () => {
  // The worked example of Twilio's "Webhooks security" page (auth token 12345).
  const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
  const params = {
    CallSid: 'CA1234567890ABCDE',
    Caller: '+12349013030',
    Digits: '1234',
    From: '+12349013030',
    To: '+18005551212',
  };
  const documented = '0/KCTR6DLpKmkAf8muzZqo1nDgQ=';

  it("accepts Twilio's documented example", () => {
    expect(verifyTwilioSignature(url, params, documented, '12345')).toBe(true);
  });

  it('agrees with the scheme written out independently', () => {
    const sorted = Object.keys(params)
      .sort()
      .map((k) => k + params[k as keyof typeof params])
      .join('');
    const independent = createHmac('sha1', '12345')
      .update(url + sorted)
      .digest('base64');
    expect(independent).toBe(documented);
  });

  it('refuses a changed parameter, URL, token or signature, and a missing header', () => {
    expect(verifyTwilioSignature(url, { ...params, Digits: '9999' }, documented, '12345')).toBe(false);
    expect(verifyTwilioSignature(url, { ...params, Extra: '' }, documented, '12345')).toBe(false);
    expect(
      verifyTwilioSignature('https://mycompany.com/myapp.php?foo=1&bar=3', params, documented, '12345'),
    ).toBe(false);
    expect(verifyTwilioSignature(url, params, documented, '12346')).toBe(false);
    expect(verifyTwilioSignature(url, params, documented.slice(0, -2), '12345')).toBe(false);
    expect(verifyTwilioSignature(url, params, undefined, '12345')).toBe(false);
    expect(verifyTwilioSignature(url, params, '', '12345')).toBe(false);
  });

  it('accepts the URL with or without its default port, as Twilio’s libraries do', () => {
    expect(
      verifyTwilioSignature('https://mycompany.com:443/myapp.php?foo=1&bar=2', params, documented, '12345'),
    ).toBe(true);
    expect(
      verifyTwilioSignature('https://mycompany.com:8443/myapp.php?foo=1&bar=2', params, documented, '12345'),
    ).toBe(false);
  });
});
