import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  checkProviderConfig,
  providerConfigSchema,
  providerConfigShape,
} from '../../src/providers/config.js';

const ACCOUNT_SID = `AC${'0'.repeat(32)}`;
const KEY_SID = `SK${'1'.repeat(32)}`;
const SERVICE_SID = `MG${'2'.repeat(32)}`;

/** Each issue as `VARIABLE: message`, as the server's loadConfig prints them. */
function issues(env: Record<string, string>): string[] {
  const result = providerConfigSchema.safeParse(env);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

let dir: string;
let goodFile: string;
const { privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const account = {
  type: 'service_account',
  project_id: 'p1',
  private_key_id: 'k1',
  private_key: privateKey,
  client_email: 'sender@p1.iam.gserviceaccount.com',
  token_uri: 'https://oauth2.googleapis.com/token',
};
const writeAccount = (name: string, content: unknown) => {
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
};

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'provider-config-'));
  goodFile = writeAccount('good.json', account);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('provider configuration: defaults', () => {
  it('needs nothing: log providers, the default template, the real base URLs, 10 s', () => {
    expect(providerConfigSchema.parse({})).toEqual({
      SMS_PROVIDER: 'log',
      SMS_TEMPLATE: 'Your verification code is {code}',
      TWILIO_BASE_URL: 'https://api.twilio.com',
      SMS_HTTP_METHOD: 'POST',
      SMS_HTTP_HEADERS: {},
      SMS_HTTP_CONTENT_TYPE: 'application/x-www-form-urlencoded',
      // No fallback unless SMS_FALLBACK_PROVIDER is set; its gateway's defaults are the primary's.
      SMS_FALLBACK_HTTP_METHOD: 'POST',
      SMS_FALLBACK_HTTP_HEADERS: {},
      SMS_FALLBACK_HTTP_CONTENT_TYPE: 'application/x-www-form-urlencoded',
      PUSH_PROVIDER: 'log',
      FCM_BASE_URL: 'https://fcm.googleapis.com',
      PROVIDER_TIMEOUT_MS: 10_000,
    });
  });

  it('reads an empty value as unset, names case-insensitively, and drops a base URL’s trailing slash', () => {
    const config = providerConfigSchema.parse({
      SMS_PROVIDER: ' Log ',
      SMS_TEMPLATE: '',
      TWILIO_BASE_URL: 'http://127.0.0.1:9999/',
      TWILIO_AUTH_TOKEN: '',
      PUSH_PROVIDER: '',
      PROVIDER_TIMEOUT_MS: '2500',
    });
    expect(config).toMatchObject({
      SMS_PROVIDER: 'log',
      SMS_TEMPLATE: 'Your verification code is {code}',
      TWILIO_BASE_URL: 'http://127.0.0.1:9999',
      PUSH_PROVIDER: 'log',
      PROVIDER_TIMEOUT_MS: 2500,
    });
    expect(config.TWILIO_AUTH_TOKEN).toBeUndefined();
  });

  it.each([
    ['SMS_PROVIDER', 'carrier-pigeon'],
    ['PUSH_PROVIDER', 'apns'],
    ['SMS_TEMPLATE', 'Welcome!'],
    ['TWILIO_BASE_URL', 'api.twilio.com'],
    ['FCM_BASE_URL', 'ftp://fcm.googleapis.com'],
    ['TWILIO_ACCOUNT_SID', 'AC123'],
    ['TWILIO_API_KEY_SID', ACCOUNT_SID],
    ['TWILIO_MESSAGING_SERVICE_SID', 'MG-nope'],
    ['TWILIO_FROM', 'not a number!'],
    ['SMS_HTTP_METHOD', 'PUT'],
    ['SMS_HTTP_HEADERS', '{"X-Key": 5}'],
    ['SMS_HTTP_HEADERS', '["X-Key"]'],
    ['SMS_HTTP_HEADERS', '{not json'],
    ['SMS_HTTP_HEADERS', '{"Content-Type":"text/plain"}'],
    ['SMS_HTTP_HEADERS', '{"Bad Name":"x"}'],
    ['SMS_HTTP_CONTENT_TYPE', 'json'],
    ['PROVIDER_TIMEOUT_MS', '10s'],
    ['PROVIDER_TIMEOUT_MS', '50'],
  ])('refuses %s=%s with a message naming it', (variable, value) => {
    const found = issues({ [variable]: value });
    expect(found.length).toBeGreaterThan(0);
    expect(found.every((line) => line.startsWith(`${variable}: `))).toBe(true);
  });
});

describe('provider configuration: what each provider needs', () => {
  const twilio = {
    SMS_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: ACCOUNT_SID,
    TWILIO_AUTH_TOKEN: 'token',
    TWILIO_FROM: '+15005550006',
  };

  it('twilio: account SID, credentials and a sender', () => {
    expect(issues(twilio)).toEqual([]);
    expect(issues({ SMS_PROVIDER: 'twilio' })).toEqual([
      'TWILIO_ACCOUNT_SID: is required when SMS_PROVIDER=twilio',
      'TWILIO_AUTH_TOKEN: is required when SMS_PROVIDER=twilio, unless TWILIO_API_KEY_SID and TWILIO_API_KEY_SECRET are set',
      'TWILIO_FROM: is required when SMS_PROVIDER=twilio, unless TWILIO_MESSAGING_SERVICE_SID is set',
    ]);
  });

  it('twilio: an API key pair instead of the auth token, a messaging service instead of From', () => {
    expect(
      issues({
        ...twilio,
        TWILIO_AUTH_TOKEN: '',
        TWILIO_FROM: '',
        TWILIO_API_KEY_SID: KEY_SID,
        TWILIO_API_KEY_SECRET: 'secret',
        TWILIO_MESSAGING_SERVICE_SID: SERVICE_SID,
      }),
    ).toEqual([]);
    expect(issues({ ...twilio, TWILIO_AUTH_TOKEN: '', TWILIO_API_KEY_SID: KEY_SID })).toEqual([
      'TWILIO_API_KEY_SECRET: is required with TWILIO_API_KEY_SID',
    ]);
    expect(issues({ ...twilio, TWILIO_API_KEY_SECRET: 'secret' })).toEqual([
      'TWILIO_API_KEY_SID: is required with TWILIO_API_KEY_SECRET',
    ]);
  });

  it('twilio variables are not required when another provider is chosen', () => {
    expect(issues({ SMS_PROVIDER: 'log', TWILIO_AUTH_TOKEN: 'left over' })).toEqual([]);
  });

  it('http: a URL and a body template with {to} and {text}', () => {
    const http = {
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: 'https://gw.example.com/send',
      SMS_HTTP_BODY: 'to={to}&msg={text}',
    };
    expect(issues(http)).toEqual([]);
    expect(issues({ SMS_PROVIDER: 'http' })).toEqual([
      'SMS_HTTP_URL: is required when SMS_PROVIDER=http',
      'SMS_HTTP_BODY: is required when SMS_PROVIDER=http and SMS_HTTP_METHOD=POST, e.g. to={to}&text={text}',
    ]);
    expect(issues({ ...http, SMS_HTTP_BODY: 'to={to}' })).toEqual(['SMS_HTTP_BODY: must contain {text}']);
    // With GET the placeholders may be in the URL.
    expect(
      issues({
        ...http,
        SMS_HTTP_METHOD: 'GET',
        SMS_HTTP_BODY: '',
        SMS_HTTP_URL: 'https://gw.example.com/s?to={to}&m={text}',
      }),
    ).toEqual([]);
    expect(issues({ ...http, SMS_HTTP_METHOD: 'GET', SMS_HTTP_BODY: '' })).toEqual([
      'SMS_HTTP_BODY: must contain {to} and {text} (or SMS_HTTP_URL must)',
    ]);
  });

  it('http: a JSON template must be JSON once filled in', () => {
    const json = {
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: 'https://gw.example.com/send',
      SMS_HTTP_CONTENT_TYPE: 'application/json',
    };
    expect(issues({ ...json, SMS_HTTP_BODY: '{"to":"{to}","text":"{text}"}' })).toEqual([]);
    expect(issues({ ...json, SMS_HTTP_BODY: '{"to":{to},"text":{text}}' })).toEqual([
      'SMS_HTTP_BODY: is not valid JSON once filled in (put {to} and {text} inside quotes: "{to}")',
    ]);
  });

  it('fcm: a readable service-account file with the fields FCM needs', () => {
    expect(issues({ PUSH_PROVIDER: 'fcm', FCM_SERVICE_ACCOUNT_FILE: goodFile })).toEqual([]);
    expect(
      issues({ PUSH_PROVIDER: 'fcm', FCM_SERVICE_ACCOUNT_FILE: goodFile, FCM_PROJECT_ID: 'other-project' }),
    ).toEqual([]);
    const missing = path.join(dir, 'missing.json');
    expect(issues({ PUSH_PROVIDER: 'fcm', FCM_SERVICE_ACCOUNT_FILE: missing })).toEqual([
      `FCM_SERVICE_ACCOUNT_FILE: cannot read ${missing} (ENOENT)`,
    ]);
    const cases: [string, unknown, string][] = [
      ['text.json', 'not json', 'is not JSON'],
      ['array.json', [], 'is not a JSON object'],
      ['user.json', { ...account, type: 'authorized_user' }, 'expected "service_account"'],
      [
        'partial.json',
        { ...account, project_id: '', client_email: undefined },
        'lacks project_id, client_email',
      ],
      ['badkey.json', { ...account, private_key: 'not a key' }, 'private_key is not an RSA private key'],
    ];
    for (const [name, content, message] of cases) {
      const found = issues({ PUSH_PROVIDER: 'fcm', FCM_SERVICE_ACCOUNT_FILE: writeAccount(name, content) });
      expect(found).toHaveLength(1);
      expect(found[0]).toMatch(/^FCM_SERVICE_ACCOUNT_FILE: /);
      expect(found[0]).toContain(message);
      expect(found[0]).not.toContain('PRIVATE KEY');
    }
    const noTokenUri = writeAccount('no-token-uri.json', { ...account, token_uri: undefined });
    expect(issues({ PUSH_PROVIDER: 'fcm', FCM_SERVICE_ACCOUNT_FILE: noTokenUri })).toEqual([
      `FCM_TOKEN_URL: is required: ${noTokenUri} has no token_uri`,
    ]);
    expect(
      issues({
        PUSH_PROVIDER: 'fcm',
        FCM_SERVICE_ACCOUNT_FILE: noTokenUri,
        FCM_TOKEN_URL: 'http://127.0.0.1:1/token',
      }),
    ).toEqual([]);
  });

  it('fcm without a key file: Application Default Credentials, for the project FCM_PROJECT_ID names', () => {
    expect(issues({ PUSH_PROVIDER: 'fcm', FCM_PROJECT_ID: 'school-app-1234' })).toEqual([]);
    expect(issues({ PUSH_PROVIDER: 'fcm' })).toEqual([
      'FCM_PROJECT_ID: is required when PUSH_PROVIDER=fcm has no FCM_SERVICE_ACCOUNT_FILE (Application Default Credentials)',
    ]);
    expect(issues({ PUSH_PROVIDER: 'fcm', FCM_PROJECT_ID: 'School App/1' })).toEqual([
      'FCM_PROJECT_ID: must be a Google Cloud project id (lower-case letters, digits, hyphens)',
    ]);
  });

  it('webhook: a URL and a secret of at least 16 characters', () => {
    const hook = {
      PUSH_PROVIDER: 'webhook',
      PUSH_WEBHOOK_URL: 'https://relay.example.org/push',
      PUSH_WEBHOOK_SECRET: 'x'.repeat(16),
    };
    expect(issues(hook)).toEqual([]);
    expect(issues({ PUSH_PROVIDER: 'webhook' })).toEqual([
      'PUSH_WEBHOOK_URL: is required when PUSH_PROVIDER=webhook',
      'PUSH_WEBHOOK_SECRET: is required when PUSH_PROVIDER=webhook (at least 16 characters)',
    ]);
    expect(issues({ ...hook, PUSH_WEBHOOK_SECRET: 'x'.repeat(15) })).toEqual([
      'PUSH_WEBHOOK_SECRET: must be at least 16 characters',
    ]);
    expect(issues({ ...hook, PUSH_WEBHOOK_URL: 'relay.example.org' })).toEqual([
      'PUSH_WEBHOOK_URL: must be an http(s) URL, e.g. https://push.example.org/hook',
    ]);
  });
});

describe('provider configuration: merged into the server’s schema', () => {
  const server = { PORT: z.coerce.number().default(3000) };

  it('keeps the cross-variable checks when the shape is merged and the check applied', () => {
    const schema = z.object(server).extend(providerConfigShape).superRefine(checkProviderConfig);
    expect(schema.parse({}).PORT).toBe(3000);
    const result = schema.safeParse({
      SMS_PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: 't',
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.path.join('.'))).toEqual(['TWILIO_FROM']);
  });

  it('keeps them when extending the provider schema', () => {
    const schema = providerConfigSchema.extend(server);
    expect(schema.safeParse({ PUSH_PROVIDER: 'webhook' }).error?.issues.map((i) => i.path.join('.'))).toEqual(
      ['PUSH_WEBHOOK_URL', 'PUSH_WEBHOOK_SECRET'],
    );
  });
});
