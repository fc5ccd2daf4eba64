import { generateKeyPairSync, type KeyObject, verify } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gcpMetadata } from 'google-auth-library';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createPushProvider, providerConfigSchema } from '../../src/providers/index.js';
import type { PushMessage, PushProvider, SendResult } from '../../src/providers/types.js';
import {
  type FakeAnswer,
  type FakeServer,
  type ReceivedRequest,
  refusedUrl,
  resultText,
  startFakeServer,
} from './fake-server.js';

const PROJECT = 'school-app-1234';
const CLIENT_EMAIL = 'push-sender@school-app-1234.iam.gserviceaccount.com';
const KEY_ID = 'f00dfeedcafe';
const SEND_PATH = `/v1/projects/${PROJECT}/messages:send`;
const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
/** Where Google's metadata server answers on Google Cloud (GCE_METADATA_HOST points it here). */
const METADATA = '/computeMetadata/v1';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});

const message: PushMessage = {
  topic: 'school-3f2a-class-7B',
  title: 'New marks',
  body: 'Marks for 7B are out',
  data: { id: '42', id_class: '7B', baseUrlSchool: 'https://school.example.org' },
  idempotencyKey: 'delivery-9',
};

interface Decoded {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  signatureValid: boolean;
}

/** Decodes a JWT and checks its RS256 signature against the test's public key (or another). */
function decodeJwt(jwt: string, key: string | KeyObject = publicKey): Decoded {
  const [header = '', claims = '', signature = ''] = jwt.split('.');
  const json = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  return {
    header: json(header),
    claims: json(claims),
    signatureValid: verify(
      'sha256',
      Buffer.from(`${header}.${claims}`),
      key,
      Buffer.from(signature, 'base64url'),
    ),
  };
}

let fake: FakeServer;
let tokenRequests: ReceivedRequest[];
let sendRequests: ReceivedRequest[];
let tokensIssued: number;
/** How the fake answers a send, given the bearer token it carried. */
let onSend: (token: string | undefined, request: ReceivedRequest) => FakeAnswer;
let onToken: (request: ReceivedRequest) => FakeAnswer | undefined;
/** How the fake metadata server answers; by default as off Google Cloud (nothing there). */
let onMetadata: (request: ReceivedRequest) => FakeAnswer;
let metadataRequests: ReceivedRequest[];
let dir: string;
let accountFile: string;
const savedEnv = { ...process.env };
function restoreEnv() {
  for (const name of Object.keys(process.env)) if (!(name in savedEnv)) delete process.env[name];
  Object.assign(process.env, savedEnv);
}

beforeAll(async () => {
  fake = await startFakeServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fcm-test-'));
  // Application Default Credentials are looked for here only: no GOOGLE_APPLICATION_CREDENTIALS,
  // an empty gcloud configuration, and the fake as the metadata server (never Google's).
  delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
  delete process.env.METADATA_SERVER_DETECTION;
  process.env.CLOUDSDK_CONFIG = dir;
  process.env.GCE_METADATA_HOST = new URL(fake.url).host;
  accountFile = path.join(dir, 'service-account.json');
  fs.writeFileSync(
    accountFile,
    JSON.stringify({
      type: 'service_account',
      project_id: PROJECT,
      private_key_id: KEY_ID,
      private_key: privateKey,
      client_email: CLIENT_EMAIL,
      client_id: '1234567890',
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: `${fake.url}/token`,
    }),
  );
});
afterAll(async () => {
  restoreEnv();
  await fake.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  fake.requests.length = 0;
  tokenRequests = [];
  sendRequests = [];
  tokensIssued = 0;
  metadataRequests = [];
  onToken = () => undefined;
  onMetadata = () => ({ status: 404, body: 'not on Google Cloud' });
  gcpMetadata.resetIsAvailableCache();
  onSend = () => ({
    status: 200,
    body: { name: `projects/${PROJECT}/messages/0:1500415314455276%31bd1c9631bd1c96` },
  });
  fake.answer((request) => {
    if (request.url === '/token' || request.url === '/oauth/alt-token') {
      tokenRequests.push(request);
      const scripted = onToken(request);
      if (scripted) return scripted;
      tokensIssued += 1;
      return {
        status: 200,
        body: { access_token: `ya29.access-${tokensIssued}`, expires_in: 3599, token_type: 'Bearer' },
      };
    }
    if (request.url.startsWith(METADATA)) {
      metadataRequests.push(request);
      return onMetadata(request);
    }
    if (request.url.endsWith('/messages:send')) {
      sendRequests.push(request);
      return onSend(request.headers.authorization?.replace(/^Bearer /, ''), request);
    }
    return { status: 404, body: 'unexpected path' };
  });
});

function fcm(env: Record<string, string> = {}): PushProvider {
  return createPushProvider(
    providerConfigSchema.parse({
      PUSH_PROVIDER: 'fcm',
      FCM_SERVICE_ACCOUNT_FILE: accountFile,
      FCM_BASE_URL: fake.url,
      ...env,
    }),
  );
}

describe('FCM: the requests Google receives', () => {
  it('exchanges a signed JWT for a token, then posts the topic message with it', async () => {
    const before = Math.floor(Date.now() / 1000);
    const result = await fcm().send(message);
    const after = Math.floor(Date.now() / 1000);

    expect(result).toEqual({
      ok: true,
      providerId: `projects/${PROJECT}/messages/0:1500415314455276%31bd1c9631bd1c96`,
      response: `HTTP 200: projects/${PROJECT}/messages/0:1500415314455276%31bd1c9631bd1c96`,
    });

    // The token request: the JWT-bearer grant, form encoded.
    expect(tokenRequests).toHaveLength(1);
    const [tokenRequest] = tokenRequests;
    expect(tokenRequest?.method).toBe('POST');
    expect(tokenRequest?.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded(;|$)/);
    expect(tokenRequest?.headers.authorization).toBeUndefined();
    const form = new URLSearchParams(tokenRequest?.body);
    expect([...form.keys()].sort()).toEqual(['assertion', 'grant_type']);
    expect(form.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer');

    // The assertion: RS256 with the service account's key, and the claims Google checks.
    const jwt = decodeJwt(form.get('assertion') ?? '');
    expect(jwt.signatureValid).toBe(true);
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey;
    expect(decodeJwt(form.get('assertion') ?? '', stranger).signatureValid).toBe(false);
    expect(jwt.header).toEqual({ alg: 'RS256' });
    expect(jwt.claims).toEqual({
      iss: CLIENT_EMAIL,
      scope: FCM_SCOPE,
      aud: `${fake.url}/token`,
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    const iat = jwt.claims.iat as number;
    expect(iat).toBeGreaterThanOrEqual(before);
    expect(iat).toBeLessThanOrEqual(after);
    expect(jwt.claims.exp).toBe(iat + 3600);

    // The send: v1 messages:send with the token just issued; nothing else asked (with a key, no
    // metadata server).
    expect(fake.requests.map((r) => r.url)).toEqual(['/token', SEND_PATH]);
    const [send] = sendRequests;
    expect(send?.method).toBe('POST');
    expect(send?.headers.authorization).toBe('Bearer ya29.access-1');
    expect(send?.headers['content-type']).toMatch(/^application\/json\b/);
    expect(JSON.parse(send?.body ?? '')).toEqual({
      message: {
        topic: 'school-3f2a-class-7B',
        notification: { title: 'New marks', body: 'Marks for 7B are out' },
        data: { id: '42', id_class: '7B', baseUrlSchool: 'https://school.example.org' },
      },
    });
  });

  it('uses FCM_TOKEN_URL instead of the file’s token_uri, as the JWT audience too', async () => {
    await fcm({ FCM_TOKEN_URL: `${fake.url}/oauth/alt-token` }).send(message);
    expect(tokenRequests.map((r) => r.url)).toEqual(['/oauth/alt-token']);
    const jwt = decodeJwt(new URLSearchParams(tokenRequests[0]?.body).get('assertion') ?? '');
    expect(jwt.claims.aud).toBe(`${fake.url}/oauth/alt-token`);
  });

  it('sends to the project FCM_PROJECT_ID names rather than the key’s', async () => {
    await fcm({ FCM_PROJECT_ID: 'school-other-9' }).send(message);
    expect(sendRequests.map((r) => r.url)).toEqual(['/v1/projects/school-other-9/messages:send']);
  });

  it('describes itself without the key', () => {
    const description = fcm().describe();
    expect(description).toContain(PROJECT);
    expect(description).not.toContain('PRIVATE KEY');
  });
});

describe('FCM: the access token', () => {
  it('is cached: two sends, one token request', async () => {
    const provider = fcm();
    expect((await provider.send(message)).ok).toBe(true);
    expect((await provider.send(message)).ok).toBe(true);
    expect(tokenRequests).toHaveLength(1);
    expect(sendRequests.map((r) => r.headers.authorization)).toEqual([
      'Bearer ya29.access-1',
      'Bearer ya29.access-1',
    ]);
  });

  it('is shared by concurrent sends', async () => {
    const provider = fcm();
    const results = await Promise.all([
      provider.send(message),
      provider.send(message),
      provider.send(message),
    ]);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(tokenRequests).toHaveLength(1);
  });

  it('is refreshed shortly before it expires', async () => {
    // The library reads the system clock: only Date is moved, timers run as they do.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      let clock = Date.parse('2030-01-01T00:00:00Z');
      vi.setSystemTime(clock);
      const provider = fcm();
      await provider.send(message);
      clock += 3000 * 1000; // 50 minutes: still good.
      vi.setSystemTime(clock);
      await provider.send(message);
      expect(tokenRequests).toHaveLength(1);
      clock += 560 * 1000; // 3560 s after issue: within the last minute of 3599 s.
      vi.setSystemTime(clock);
      await provider.send(message);
      expect(tokenRequests).toHaveLength(2);
      expect(sendRequests.at(-1)?.headers.authorization).toBe('Bearer ya29.access-2');
      // The new JWT carries the moved clock.
      const jwt = decodeJwt(new URLSearchParams(tokenRequests[1]?.body).get('assertion') ?? '');
      expect(jwt.claims.iat).toBe(Math.floor(clock / 1000));
    } finally {
      vi.useRealTimers();
    }
  });

  it('is refreshed once on a 401, and the send retried with the new one', async () => {
    onSend = (token) =>
      token === 'ya29.access-1'
        ? {
            status: 401,
            body: {
              error: {
                code: 401,
                message: 'Request had invalid authentication credentials.',
                status: 'UNAUTHENTICATED',
              },
            },
          }
        : { status: 200, body: { name: `projects/${PROJECT}/messages/2` } };
    const result = await fcm().send(message);
    expect(result).toMatchObject({ ok: true, providerId: `projects/${PROJECT}/messages/2` });
    expect(tokenRequests).toHaveLength(2);
    expect(sendRequests.map((r) => r.headers.authorization)).toEqual([
      'Bearer ya29.access-1',
      'Bearer ya29.access-2',
    ]);
  });

  it('a 401 after the refresh is permanent (misconfiguration), without a third try', async () => {
    onSend = () => ({
      status: 401,
      body: { error: { code: 401, message: 'invalid credentials', status: 'UNAUTHENTICATED' } },
    });
    const result = await fcm().send(message);
    expect(result).toMatchObject({ ok: false, kind: 'permanent', status: 401 });
    expect(tokenRequests).toHaveLength(2);
    expect(sendRequests).toHaveLength(2);
  });

  it('a 403 is permanent at once', async () => {
    onSend = () => ({
      status: 403,
      body: { error: { code: 403, message: 'Permission denied', status: 'PERMISSION_DENIED' } },
    });
    expect(await fcm().send(message)).toMatchObject({ ok: false, kind: 'permanent', status: 403 });
    expect(tokenRequests).toHaveLength(1);
  });

  it('a refused grant (invalid_grant) is permanent and nothing is sent', async () => {
    onToken = () => ({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' },
    });
    const result = await fcm().send(message);
    expect(result).toMatchObject({
      ok: false,
      kind: 'permanent',
      status: 400,
      error:
        'FCM token endpoint refused the service account (invalid_grant: Invalid JWT Signature.) (HTTP 400)',
    });
    expect(sendRequests).toHaveLength(0);
  });

  it('an unavailable token endpoint is transient, honouring Retry-After', async () => {
    onToken = () => ({ status: 503, headers: { 'Retry-After': '4' } });
    expect(await fcm().send(message)).toMatchObject({
      ok: false,
      kind: 'transient',
      retryAfterMs: 4000,
      status: 503,
    });
    expect(sendRequests).toHaveLength(0);
  });
});

describe('FCM: classification of errors', () => {
  const fcmError = (status: number, grpc: string, errorCode?: string) => ({
    error: {
      code: status,
      message: `FCM says ${errorCode ?? grpc}`,
      status: grpc,
      details: errorCode
        ? [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }]
        : [],
    },
  });

  it.each([
    [404, 'NOT_FOUND', 'UNREGISTERED'],
    [400, 'INVALID_ARGUMENT', 'INVALID_ARGUMENT'],
    [403, 'PERMISSION_DENIED', 'SENDER_ID_MISMATCH'],
    [401, 'UNAUTHENTICATED', 'THIRD_PARTY_AUTH_ERROR'],
    [400, 'FAILED_PRECONDITION', undefined],
  ])('HTTP %i %s (%s) is permanent', async (status, grpc, errorCode) => {
    onSend = () => ({ status, body: fcmError(status, grpc, errorCode) });
    const result = await fcm().send(message);
    expect(result).toMatchObject({ ok: false, kind: 'permanent', status });
    expect(result.ok || result.error).toContain(errorCode ?? grpc);
  });

  it('QUOTA_EXCEEDED is transient, after at least 60 s', async () => {
    onSend = () => ({
      status: 429,
      headers: { 'Retry-After': '10' },
      body: fcmError(429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED'),
    });
    const result = await fcm().send(message);
    expect(result).toMatchObject({ ok: false, kind: 'transient', retryAfterMs: 60_000, status: 429 });
    expect(result.ok || result.error).toContain('QUOTA_EXCEEDED');

    onSend = () => ({
      status: 429,
      headers: { 'Retry-After': '120' },
      body: fcmError(429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED'),
    });
    expect(await fcm().send(message)).toMatchObject({ kind: 'transient', retryAfterMs: 120_000 });

    onSend = () => ({ status: 429, body: fcmError(429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED') });
    expect(await fcm().send(message)).toMatchObject({ kind: 'transient', retryAfterMs: 60_000 });
  });

  it.each([
    [503, 'UNAVAILABLE', 'UNAVAILABLE'],
    [500, 'INTERNAL', 'INTERNAL'],
    [502, 'UNKNOWN', undefined],
  ])('HTTP %i %s (%s) is transient, honouring Retry-After', async (status, grpc, errorCode) => {
    onSend = () => ({ status, headers: { 'Retry-After': '5' }, body: fcmError(status, grpc, errorCode) });
    expect(await fcm().send(message)).toMatchObject({
      ok: false,
      kind: 'transient',
      retryAfterMs: 5000,
      status,
    });
    onSend = () => ({ status, body: '<html>bad gateway</html>' });
    const plain = await fcm().send(message);
    expect(plain).toMatchObject({ ok: false, kind: 'transient', status });
    expect(plain.ok || plain.retryAfterMs).toBeUndefined();
  });

  it('a payload over 2048 bytes is permanent, and nothing reaches Google', async () => {
    const result = await fcm().send({ ...message, body: 'é'.repeat(1000) });
    expect(result).toEqual({
      ok: false,
      kind: 'permanent',
      error: expect.stringContaining('FCM allows at most 2048 bytes (2 KB) for topic messages'),
    });
    expect(fake.requests).toHaveLength(0);
  });

  it('a payload of exactly 2048 bytes (keys and values) is sent', async () => {
    // title+body keys (9 bytes) + data keys and values; fill the body to the limit.
    const used =
      Buffer.byteLength(`title${message.title}body`) +
      Object.entries(message.data).reduce((n, [k, v]) => n + Buffer.byteLength(k + v), 0);
    const fits = { ...message, body: 'b'.repeat(2048 - used) };
    expect((await fcm().send(fits)).ok).toBe(true);
    expect(sendRequests).toHaveLength(1);
    expect((await fcm().send({ ...fits, body: `${fits.body}b` })).ok).toBe(false);
    expect(sendRequests).toHaveLength(1);
  });

  it('an invalid topic name is permanent, and nothing is sent', async () => {
    expect(await fcm().send({ ...message, topic: '/topics/a b' })).toMatchObject({
      ok: false,
      kind: 'permanent',
    });
    expect(fake.requests).toHaveLength(0);
  });

  it('timeouts and refused connections are transient', async () => {
    onSend = () => ({ status: 200, body: {}, delayMs: 1500 });
    expect(await fcm({ PROVIDER_TIMEOUT_MS: '200' }).send(message)).toEqual({
      ok: false,
      kind: 'transient',
      error: 'FCM: no answer within 200 ms',
      taken: 'unknown',
    });
    onToken = () => ({ status: 200, body: {}, delayMs: 1500 });
    expect(await fcm({ PROVIDER_TIMEOUT_MS: '200' }).send(message)).toEqual({
      ok: false,
      kind: 'transient',
      error: 'FCM token endpoint: no answer within 200 ms',
      taken: 'unknown',
    });
    onToken = () => undefined;
    const refused = await refusedUrl();
    expect(await fcm({ FCM_BASE_URL: refused }).send(message)).toEqual({
      ok: false,
      kind: 'transient',
      error: 'FCM: connection refused (ECONNREFUSED)',
      taken: 'no',
    });
    expect(await fcm({ FCM_TOKEN_URL: `${refused}/token` }).send(message)).toEqual({
      ok: false,
      kind: 'transient',
      error: 'FCM token endpoint: connection refused (ECONNREFUSED)',
      taken: 'no',
    });
  });

  it('never records the private key, the assertion or an access token', async () => {
    const results: SendResult[] = [];
    // Answers echoing what they received: the bearer token, the assertion.
    onSend = (token) => ({
      status: 500,
      body: { error: { code: 500, message: `token ${token} rejected`, status: 'INTERNAL' } },
    });
    results.push(await fcm().send(message));
    onSend = (token) => ({ status: 401, body: `Bearer ${token}` });
    results.push(await fcm().send(message));
    onToken = (request) => ({
      status: 400,
      body: { error: 'invalid_grant', error_description: `bad ${request.body}` },
    });
    results.push(await fcm().send(message));

    const text = results.map(resultText).join('\n');
    expect(text).toContain('[redacted]');
    expect(text).not.toMatch(/ya29\.access-\d/);
    expect(text).not.toContain('PRIVATE KEY');
    for (const request of tokenRequests) {
      const assertion = new URLSearchParams(request.body).get('assertion') ?? '';
      expect(text).not.toContain(assertion.split('.')[2]);
    }
  });
});

describe('FCM with Application Default Credentials (no key configured)', () => {
  const ADC_PROJECT = 'school-adc-1';
  function fcmAdc(env: Record<string, string> = {}): PushProvider {
    return createPushProvider(
      providerConfigSchema.parse({
        PUSH_PROVIDER: 'fcm',
        FCM_PROJECT_ID: ADC_PROJECT,
        FCM_BASE_URL: fake.url,
        FCM_TOKEN_URL: `${fake.url}/token`,
        ...env,
      }),
    );
  }
  const metadata = (body: object | string): FakeAnswer => ({
    status: 200,
    headers: { 'Metadata-Flavor': 'Google' },
    body,
  });

  it('GOOGLE_APPLICATION_CREDENTIALS naming a key: the same signed grant, the project from FCM_PROJECT_ID', async () => {
    process.env.GOOGLE_APPLICATION_CREDENTIALS = accountFile;
    try {
      const provider = fcmAdc();
      expect(provider.describe()).toContain(
        `FCM project ${ADC_PROJECT} with Application Default Credentials`,
      );
      expect(await provider.send(message)).toMatchObject({ ok: true });
    } finally {
      delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    }
    expect(tokenRequests).toHaveLength(1);
    const form = new URLSearchParams(tokenRequests[0]?.body);
    expect(form.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer');
    const jwt = decodeJwt(form.get('assertion') ?? '');
    expect(jwt.signatureValid).toBe(true);
    expect(jwt.claims).toMatchObject({ iss: CLIENT_EMAIL, scope: FCM_SCOPE, aud: `${fake.url}/token` });
    expect(sendRequests.map((r) => [r.url, r.headers.authorization])).toEqual([
      [`/v1/projects/${ADC_PROJECT}/messages:send`, 'Bearer ya29.access-1'],
    ]);
    expect(metadataRequests).toHaveLength(0);
  });

  it('on Google Cloud (workload identity): the token from the metadata server, for the FCM scope', async () => {
    let issued = 0;
    onMetadata = (request) => {
      if (request.url === `${METADATA}/instance`) return metadata('');
      if (request.url.startsWith(`${METADATA}/instance/service-accounts/default/token?`)) {
        issued += 1;
        return metadata({ access_token: `ya29.metadata-${issued}`, expires_in: 3599, token_type: 'Bearer' });
      }
      return { status: 404, body: 'unexpected metadata path' };
    };
    const provider = fcmAdc();
    expect(await provider.send(message)).toMatchObject({ ok: true });
    expect(await provider.send(message)).toMatchObject({ ok: true });

    const asked = metadataRequests.filter((r) => r.url.includes('/token?'));
    expect(asked).toHaveLength(1);
    expect(asked[0]?.headers['metadata-flavor']).toBe('Google');
    expect(new URL(asked[0]?.url ?? '', fake.url).searchParams.get('scopes')).toBe(FCM_SCOPE);
    expect(sendRequests.map((r) => r.headers.authorization)).toEqual([
      'Bearer ya29.metadata-1',
      'Bearer ya29.metadata-1',
    ]);
    expect(tokenRequests).toHaveLength(0);
  });

  it('no credentials anywhere: a permanent failure naming it, and nothing sent', async () => {
    const result = await fcmAdc().send(message);
    expect(result).toMatchObject({ ok: false, kind: 'permanent' });
    expect(result.ok || result.error).toMatch(/^FCM credentials: Could not load the default credentials/);
    expect(sendRequests).toHaveLength(0);
    expect(tokenRequests).toHaveLength(0);
  });
});
