import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createPushProvider,
  providerConfigSchema,
  verifyWebhookSignature,
} from '../../src/providers/index.js';
import type { PushMessage, PushProvider } from '../../src/providers/types.js';
import { type FakeServer, refusedUrl, resultText, startFakeServer } from './fake-server.js';

const SECRET = 'webhook-shared-secret-0123456789';
const NOW = Date.parse('2030-05-06T07:08:09.123Z');

const message: PushMessage = {
  topic: 'school-3f2a',
  title: 'Homework',
  body: 'New homework for "7B" – €',
  data: { type: 'homework', id: '42', baseUrlSchool: 'https://school.example.org' },
  idempotencyKey: 'delivery-5',
};

let fake: FakeServer;
beforeAll(async () => {
  fake = await startFakeServer();
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
  fake.answer(() => ({ status: 202 }));
});

function webhook(env: Record<string, string> = {}, now?: () => number): PushProvider {
  return createPushProvider(
    providerConfigSchema.parse({
      PUSH_PROVIDER: 'webhook',
      PUSH_WEBHOOK_URL: `${fake.url}/hooks/push`,
      PUSH_WEBHOOK_SECRET: SECRET,
      ...env,
    }),
    now ? { now } : {},
  );
}

describe('Webhook: the request the receiver gets', () => {
  it('POSTs the message as JSON, signed over the timestamp and the raw body', async () => {
    const result = await webhook({}, () => NOW).send(message);
    expect(result).toEqual({ ok: true, response: 'HTTP 202' });

    expect(fake.requests).toHaveLength(1);
    const [request] = fake.requests;
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/hooks/push');
    expect(request?.headers['content-type']).toMatch(/^application\/json\b/);
    expect(request?.headers['idempotency-key']).toBe('delivery-5');
    expect(request?.headers['x-signature-timestamp']).toBe(String(Math.floor(NOW / 1000)));
    expect(JSON.parse(request?.body ?? '')).toEqual({
      topic: 'school-3f2a',
      title: 'Homework',
      body: 'New homework for "7B" – €',
      data: { type: 'homework', id: '42', baseUrlSchool: 'https://school.example.org' },
      idempotencyKey: 'delivery-5',
      sentAt: '2030-05-06T07:08:09.123Z',
    });

    // As a receiver checks it.
    const timestamp = request?.headers['x-signature-timestamp'] as string;
    const signature = request?.headers['x-signature'] as string;
    expect(verifyWebhookSignature(SECRET, timestamp, request?.body ?? '', signature, 300, NOW)).toBe(true);
    // And as the scheme is written: sha256= + hex HMAC-SHA256 over `${timestamp}.${rawBody}`.
    const independent = createHmac('sha256', SECRET).update(`${timestamp}.${request?.body}`).digest('hex');
    expect(signature).toBe(`sha256=${independent}`);
  });

  it('signs with the current time by default', async () => {
    await webhook().send(message);
    const [request] = fake.requests;
    expect(
      verifyWebhookSignature(
        SECRET,
        request?.headers['x-signature-timestamp'] as string,
        Buffer.from(request?.body ?? ''),
        request?.headers['x-signature'] as string,
        5,
      ),
    ).toBe(true);
  });

  it('describes itself without the secret', () => {
    expect(webhook().describe()).toBe(`Signed webhook: POST ${fake.url}/hooks/push`);
  });
});

describe('verifyWebhookSignature', () => {
  const timestamp = Math.floor(NOW / 1000);
  const body = '{"topic":"t","title":"x"}';
  const signature = `sha256=${createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex')}`;

  it('accepts a fresh, correct signature (timestamp as a string or a number)', () => {
    expect(verifyWebhookSignature(SECRET, String(timestamp), body, signature, 300, NOW)).toBe(true);
    expect(verifyWebhookSignature(SECRET, timestamp, body, signature, 300, NOW + 299_000)).toBe(true);
  });

  it('refuses a wrong secret, a changed body or timestamp, a stale or future timestamp, a malformed header', () => {
    expect(verifyWebhookSignature('another-secret-0123456789', timestamp, body, signature, 300, NOW)).toBe(
      false,
    );
    expect(verifyWebhookSignature(SECRET, timestamp, `${body} `, signature, 300, NOW)).toBe(false);
    expect(verifyWebhookSignature(SECRET, timestamp + 1, body, signature, 300, NOW)).toBe(false);
    expect(verifyWebhookSignature(SECRET, timestamp, body, signature, 300, NOW + 301_000)).toBe(false);
    expect(verifyWebhookSignature(SECRET, timestamp, body, signature, 300, NOW - 301_000)).toBe(false);
    expect(verifyWebhookSignature(SECRET, timestamp, body, signature.replace('sha256=', ''), 300, NOW)).toBe(
      false,
    );
    expect(verifyWebhookSignature(SECRET, timestamp, body, signature.slice(0, -2), 300, NOW)).toBe(false);
    expect(verifyWebhookSignature(SECRET, timestamp, body, undefined, 300, NOW)).toBe(false);
    expect(verifyWebhookSignature(SECRET, 'yesterday', body, signature, 300, NOW)).toBe(false);
  });
});

describe('Webhook: classification of answers', () => {
  it.each([200, 201, 204])('HTTP %i is a success', async (status) => {
    fake.answer(() => ({ status }));
    expect(await webhook().send(message)).toMatchObject({ ok: true, response: `HTTP ${status}` });
  });

  it('keeps the receiver’s id when it answers one', async () => {
    fake.answer(() => ({ status: 200, body: { id: 'relay-77' } }));
    expect(await webhook().send(message)).toEqual({
      ok: true,
      providerId: 'relay-77',
      response: 'HTTP 200: {"id":"relay-77"}',
    });
  });

  it('429 with Retry-After: 7 is transient after 7 s', async () => {
    fake.answer(() => ({ status: 429, headers: { 'Retry-After': '7' } }));
    expect(await webhook().send(message)).toEqual({
      ok: false,
      kind: 'transient',
      retryAfterMs: 7000,
      status: 429,
      error: 'Push webhook temporarily unavailable (HTTP 429)',
      response: '',
    });
  });

  it.each([500, 503])('HTTP %i is transient', async (status) => {
    fake.answer(() => ({ status, body: 'down' }));
    expect(await webhook().send(message)).toMatchObject({
      ok: false,
      kind: 'transient',
      status,
      response: 'down',
    });
  });

  it.each([400, 401, 404, 410, 422])('HTTP %i is permanent', async (status) => {
    fake.answer(() => ({ status, body: { error: 'bad signature' } }));
    expect(await webhook().send(message)).toMatchObject({
      ok: false,
      kind: 'permanent',
      status,
      error: `Push webhook refused the push: bad signature (HTTP ${status})`,
    });
  });

  it('timeout and connection refused are transient', async () => {
    fake.answer(() => ({ status: 200, delayMs: 1500 }));
    expect(await webhook({ PROVIDER_TIMEOUT_MS: '200' }).send(message)).toEqual({
      ok: false,
      kind: 'transient',
      error: 'Push webhook: no answer within 200 ms',
      taken: 'unknown',
    });
    expect(await webhook({ PUSH_WEBHOOK_URL: `${await refusedUrl()}/hook` }).send(message)).toEqual({
      ok: false,
      kind: 'transient',
      error: 'Push webhook: connection refused (ECONNREFUSED)',
      taken: 'no',
    });
  });

  it('never records the secret', async () => {
    fake.answer(() => ({ status: 401, body: `expected secret ${SECRET}` }));
    const text = resultText(await webhook().send(message));
    expect(text).toContain('[redacted]');
    expect(text).not.toContain(SECRET);
  });
});
