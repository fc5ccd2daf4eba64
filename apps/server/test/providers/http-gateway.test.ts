import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSmsProvider, providerConfigSchema } from '../../src/providers/index.js';
import type { SmsMessage, SmsProvider } from '../../src/providers/types.js';
import { type FakeServer, refusedUrl, resultText, startFakeServer } from './fake-server.js';

const API_KEY = 'gateway-api-key-0123456789';
// Characters each encoding must get right: &, =, +, quotes, a backslash, a newline, `{to}`, non-ASCII.
const message: SmsMessage = {
  to: '+447911123456',
  text: 'Code 4711 & "x"=y+z \\ {to}\nÄ€',
  idempotencyKey: 'delivery-7',
};

let fake: FakeServer;
beforeAll(async () => {
  fake = await startFakeServer();
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
  fake.answer(() => ({ status: 200, body: { id: 'gw-123', status: 'accepted' } }));
});

function gateway(env: Record<string, string>): SmsProvider {
  return createSmsProvider(
    providerConfigSchema.parse({
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: `${fake.url}/sms/send`,
      SMS_HTTP_HEADERS: JSON.stringify({ 'X-Api-Key': API_KEY }),
      ...env,
    }),
  );
}

describe('HTTP gateway: the request the gateway receives', () => {
  it('POSTs a form body by default, values URL-encoded, with the configured headers', async () => {
    const result = await gateway({ SMS_HTTP_BODY: 'to={to}&text={text}&ref={idempotencyKey}' }).send(message);

    expect(result).toEqual({
      ok: true,
      providerId: 'gw-123',
      response: 'HTTP 200: {"id":"gw-123","status":"accepted"}',
    });
    const [request] = fake.requests;
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/sms/send');
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request?.headers['x-api-key']).toBe(API_KEY);
    expect(request?.headers['idempotency-key']).toBe('delivery-7');
    expect([...new URLSearchParams(request?.body)]).toEqual([
      ['to', message.to],
      ['text', message.text],
      ['ref', 'delivery-7'],
    ]);
  });

  it('escapes values as JSON strings for application/json', async () => {
    const provider = gateway({
      SMS_HTTP_CONTENT_TYPE: 'application/json',
      SMS_HTTP_BODY: '{"recipient":"{to}","message":"{text}","options":{"ref":"{idempotencyKey}"}}',
    });
    expect((await provider.send(message)).ok).toBe(true);
    const [request] = fake.requests;
    expect(request?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request?.body ?? '')).toEqual({
      recipient: message.to,
      message: message.text,
      options: { ref: 'delivery-7' },
    });
  });

  it('escapes values for XML bodies', async () => {
    const provider = gateway({
      SMS_HTTP_CONTENT_TYPE: 'application/xml',
      SMS_HTTP_BODY: '<sms><to>{to}</to><text>{text}</text></sms>',
    });
    await provider.send(message);
    expect(fake.requests[0]?.body).toBe(
      '<sms><to>+447911123456</to><text>Code 4711 &amp; &quot;x&quot;=y+z \\ {to}\nÄ€</text></sms>',
    );
  });

  it('with GET, appends the template as the query and sends no body', async () => {
    const provider = gateway({
      SMS_HTTP_URL: `${fake.url}/api/send?user=school`,
      SMS_HTTP_METHOD: 'get',
      SMS_HTTP_BODY: 'to={to}&text={text}',
    });
    expect((await provider.send(message)).ok).toBe(true);
    const [request] = fake.requests;
    expect(request?.method).toBe('GET');
    expect(request?.body).toBe('');
    expect(request?.headers['content-type']).toBeUndefined();
    const url = new URL(request?.url ?? '', fake.url);
    expect(url.pathname).toBe('/api/send');
    expect([...url.searchParams]).toEqual([
      ['user', 'school'],
      ['to', message.to],
      ['text', message.text],
    ]);
  });

  it('with GET, fills placeholders in the URL itself', async () => {
    const provider = gateway({
      SMS_HTTP_URL: `${fake.url}/send/{to}?msg={text}`,
      SMS_HTTP_METHOD: 'GET',
    });
    expect((await provider.send(message)).ok).toBe(true);
    const url = new URL(fake.requests[0]?.url ?? '', fake.url);
    expect(decodeURIComponent(url.pathname)).toBe(`/send/${message.to}`);
    expect(url.searchParams.get('msg')).toBe(message.text);
  });

  it('describes itself without the query or credentials', () => {
    const provider = gateway({
      SMS_HTTP_URL: `${fake.url}/send?api_key=${API_KEY}`,
      SMS_HTTP_BODY: 'to={to}&t={text}',
    });
    expect(provider.describe()).toBe(
      `HTTP gateway: POST ${fake.url}/send (application/x-www-form-urlencoded)`,
    );
  });
});

describe('HTTP gateway: classification of answers', () => {
  const provider = () => gateway({ SMS_HTTP_BODY: 'to={to}&text={text}' });

  it('any 2xx is a success', async () => {
    fake.answer(() => ({ status: 202 }));
    expect(await provider().send(message)).toEqual({ ok: true, response: 'HTTP 202' });
  });

  it('429 with Retry-After: 7 is transient after 7 s', async () => {
    fake.answer(() => ({ status: 429, headers: { 'Retry-After': '7' }, body: 'slow down' }));
    expect(await provider().send(message)).toEqual({
      ok: false,
      kind: 'transient',
      retryAfterMs: 7000,
      status: 429,
      error: 'SMS gateway temporarily unavailable: slow down (HTTP 429)',
      response: 'slow down',
      // It answered: it did not take the message (a fallback may have it at once).
      taken: 'no',
    });
  });

  it.each([500, 502, 503, 504])('HTTP %i is transient', async (status) => {
    fake.answer(() => ({ status }));
    expect(await provider().send(message)).toMatchObject({ ok: false, kind: 'transient', status });
  });

  it.each([400, 401, 403, 404, 422])('HTTP %i is permanent', async (status) => {
    fake.answer(() => ({ status, body: { error: 'no' } }));
    expect(await provider().send(message)).toMatchObject({
      ok: false,
      kind: 'permanent',
      status,
      error: `SMS gateway refused the message: no (HTTP ${status})`,
    });
  });

  it("leads its error with the gateway's own reason, from its JSON or a short text, never markup", async () => {
    const cases: [body: unknown, error: string][] = [
      [
        { error: { code: 17, message: 'Account suspended' } },
        'SMS gateway refused the message: Account suspended (HTTP 403)',
      ],
      [
        { status: 'failed', detail: 'Number is on the do-not-send list' },
        'SMS gateway refused the message: Number is on the do-not-send list (HTTP 403)',
      ],
      [{ errors: [{ title: 'Invalid sender' }] }, 'SMS gateway refused the message (HTTP 403)'],
      ['insufficient credit', 'SMS gateway refused the message: insufficient credit (HTTP 403)'],
      ['<html><body><h1>403 Forbidden</h1></body></html>', 'SMS gateway refused the message (HTTP 403)'],
      ['', 'SMS gateway refused the message (HTTP 403)'],
      [
        { message: `${'x'.repeat(300)}` },
        `SMS gateway refused the message: ${'x'.repeat(200)}… (100 more characters) (HTTP 403)`,
      ],
    ];
    for (const [body, error] of cases) {
      fake.answer(() => ({ status: 403, body: body as string }));
      expect(await provider().send(message)).toMatchObject({ ok: false, kind: 'permanent', error });
    }
  });

  it('keeps the text it sent out of the reason a gateway echoes', async () => {
    fake.answer((req) => ({
      status: 400,
      body: { message: `Rejected: ${new URLSearchParams(req.body).get('text')}` },
    }));
    const result = await provider().send(message);
    expect(result).toMatchObject({
      ok: false,
      error: 'SMS gateway refused the message: Rejected: [redacted] (HTTP 400)',
    });
  });

  it('a redirect is permanent (not followed)', async () => {
    fake.answer(() => ({ status: 302, headers: { Location: 'https://elsewhere.example/send?key=x' } }));
    const result = await provider().send(message);
    expect(result).toMatchObject({ ok: false, kind: 'permanent', status: 302 });
    expect(fake.requests).toHaveLength(1);
  });

  it('timeout and connection refused are transient', async () => {
    fake.answer(() => ({ status: 200, delayMs: 1500 }));
    expect(
      await gateway({ SMS_HTTP_BODY: 'to={to}&text={text}', PROVIDER_TIMEOUT_MS: '200' }).send(message),
    ).toEqual({
      ok: false,
      kind: 'transient',
      error: 'SMS gateway: no answer within 200 ms',
      taken: 'unknown',
    });
    expect(
      await gateway({
        SMS_HTTP_URL: `${await refusedUrl()}/send`,
        SMS_HTTP_BODY: 'to={to}&text={text}',
      }).send(message),
    ).toEqual({
      ok: false,
      kind: 'transient',
      error: 'SMS gateway: connection refused (ECONNREFUSED)',
      taken: 'no',
    });
  });

  it('keeps an echoed message text (the auth code) out of the record', async () => {
    fake.answer((request) => ({
      status: 200,
      body: { id: 'gw-9', echo: new URLSearchParams(request.body).get('text') },
    }));
    const result = await gateway({ SMS_HTTP_BODY: 'to={to}&text={text}' }).send(message);
    expect(result).toMatchObject({ ok: true, providerId: 'gw-9' });
    expect(resultText(result)).not.toContain('4711');
  });

  it('never records header credentials or a key in the URL', async () => {
    fake.answer((request) => ({
      status: 401,
      body: `bad key ${request.headers['x-api-key']}, bad token ${request.headers.authorization}, url ${request.url}`,
    }));
    const result = await gateway({
      SMS_HTTP_URL: `${fake.url}/send?api_key=url-secret-987654321`,
      SMS_HTTP_HEADERS: JSON.stringify({
        'X-Api-Key': API_KEY,
        Authorization: 'Bearer bearer-secret-123456',
      }),
      SMS_HTTP_BODY: 'to={to}&text={text}',
    }).send(message);
    expect(result).toMatchObject({ ok: false, kind: 'permanent' });
    const text = resultText(result);
    expect(text).toContain('[redacted]');
    for (const secret of [API_KEY, 'bearer-secret-123456', 'url-secret-987654321'])
      expect(text).not.toContain(secret);
  });
});
