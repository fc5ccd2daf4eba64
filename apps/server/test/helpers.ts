import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CSRF_HEADER, CSRF_HEADER_VALUE } from '@school/contract';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { vi } from 'vitest';
import { type BuildOptions, buildApp } from '../src/app.js';
import { type Config, loadConfig } from '../src/config.js';
import type { NewDelivery } from '../src/outbox/index.js';
import { createSealer } from '../src/secrets/sealer.js';
import type { NewCall } from '../src/store/index.js';

/** A fresh data folder under the system's temp directory, removed by the returned function. */
export function tempDataDir(): { dir: string; remove: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-messaging-test-'));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** The key auth codes are sealed with on PostgreSQL, where CODE_ENCRYPTION_KEY is required. */
export const TEST_CODE_KEY = Buffer.alloc(32, 7).toString('base64');

/** A sealer for tests that open the store themselves. */
export const testSealer = () => createSealer(Buffer.from(TEST_CODE_KEY, 'base64'));

/** The admin every test app starts with (ADMIN_USERNAME / ADMIN_PASSWORD). */
export const TEST_ADMIN = { username: 'admin', password: 'correct horse battery' } as const;

export interface TestApp {
  readonly app: FastifyInstance;
  readonly config: Config;
  readonly dataDir: string;
  /**
   * `app.inject` as the logged-in admin from the console: the session cookie, the server's own
   * Origin and the console's CSRF header are added (a test's own headers win).
   */
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  /** Logs in and answers the session cookie header (`session=…`). */
  login(username?: string, password?: string): Promise<string>;
  /** Closes the app and removes its data folder. */
  close(): Promise<void>;
}

/** Headers of a request from the console's own page (same origin, CSRF header). */
export const CONSOLE_HEADERS = { origin: 'http://localhost:80', [CSRF_HEADER]: CSRF_HEADER_VALUE } as const;

/** Builds the real app on a temporary SQLite database; `env` overrides configuration. */
export async function startTestApp(
  env: Record<string, string> = {},
  dataDir?: string,
  /** Pino options (e.g. a `stream` to read the log); none: no logging. */
  logger?: BuildOptions['logger'],
): Promise<TestApp> {
  const temp = dataDir ? undefined : tempDataDir();
  const dir = dataDir ?? (temp as { dir: string }).dir;
  const config = loadConfig({
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    SQLITE_SYNCHRONOUS: 'NORMAL',
    // Tests send many codes to one phone from one address; the limits have their own tests.
    AUTHCODE_LIMIT_PER_PHONE: 'off',
    AUTHCODE_LIMIT_PER_IP: 'off',
    AUTHCODE_LIMIT_PER_RANGE: 'off',
    ASMX_LIMIT_PER_IP: 'off',
    // Whatever this machine's free space, records keep their bodies and calls are taken; the
    // disk's thresholds have tests of their own.
    MIN_FREE_DISK_MB: '0',
    REFUSE_FREE_DISK_MB: '0',
    ADMIN_USERNAME: TEST_ADMIN.username,
    ADMIN_PASSWORD: TEST_ADMIN.password,
    // On PostgreSQL the key is required; on SQLite the key file in DATA_DIR is used.
    ...(env.DATABASE_URL ? { CODE_ENCRYPTION_KEY: TEST_CODE_KEY } : {}),
    ...env,
  });
  // Tests record calls at past times of their choosing: no roll-up runs behind them.
  const app = await buildApp(config, { logger: logger ?? false, rollups: false });
  await app.ready();
  // The console's page is at PUBLIC_BASE_URL when it is set (the CSRF rule checks the Origin).
  const consoleHeaders = config.PUBLIC_BASE_URL
    ? { ...CONSOLE_HEADERS, origin: config.PUBLIC_BASE_URL }
    : CONSOLE_HEADERS;
  async function login(username: string = TEST_ADMIN.username, password: string = TEST_ADMIN.password) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/session',
      headers: consoleHeaders,
      payload: { username, password },
    });
    if (res.statusCode !== 200) throw new Error(`login as ${username} failed: ${res.statusCode} ${res.body}`);
    const cookie = res.cookies.find((c) => c.name === 'session');
    if (!cookie) throw new Error('login answered no session cookie');
    return `session=${cookie.value}`;
  }
  let adminCookie: Promise<string> | undefined;
  return {
    app,
    config,
    dataDir: dir,
    login,
    async inject(options) {
      adminCookie ??= login();
      const cookie = await adminCookie;
      return app.inject({
        ...options,
        headers: { cookie, ...consoleHeaders, ...(options.headers as Record<string, string> | undefined) },
      });
    },
    async close() {
      await app.close();
      temp?.remove();
    },
  };
}

/** The newest call record. */
export async function lastCall(app: FastifyInstance) {
  const [row] = await app.history.list({ limit: 1 });
  if (!row) throw new Error('no call recorded');
  return row;
}

/** Registers the school the examples and golden files use (https://school.example.org/). */
export async function registerSchool(
  app: FastifyInstance,
  school: { name?: string; baseUrl?: string; topicKey?: string; allowedIps?: string | null } = {},
) {
  return app.store.schools.create({
    name: school.name ?? 'Example School',
    base_url: school.baseUrl ?? 'https://school.example.org',
    topic_key: school.topicKey ?? 'example',
    allowed_ips: school.allowedIps ?? null,
  });
}

/**
 * Logs in to a listening server as the console would and answers a `fetch` that carries the
 * session cookie, the server's own Origin and the console's CSRF header.
 */
export async function consoleFetch(
  baseUrl: string,
  username: string = TEST_ADMIN.username,
  password: string = TEST_ADMIN.password,
): Promise<(path: string, init?: RequestInit) => Promise<Response>> {
  const origin = new URL(baseUrl).origin;
  const headers = { origin, [CSRF_HEADER]: CSRF_HEADER_VALUE };
  const res = await fetch(`${baseUrl}/api/session`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  if (res.status !== 200) throw new Error(`login as ${username} failed: ${res.status} ${await res.text()}`);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  return (path, init = {}) =>
    fetch(`${baseUrl}${path}`, {
      ...init,
      headers: { cookie, ...headers, ...(init.headers as Record<string, string> | undefined) },
    });
}

/** When the example call rows happened, unless a test says otherwise. */
export const CALL_T0 = Date.parse('2026-11-01T10:00:00.000Z');

/** A call row as the store records it (an AuthCode over SOAP 1.1, answered 200), for seeding. */
export function callRow(overrides: Partial<NewCall> = {}): NewCall {
  return {
    at: CALL_T0,
    group_name: 'AuthCodeSending',
    operation: 'AuthCode',
    binding: 'soap11',
    caller_ip: '203.0.113.1',
    user_agent: 'test',
    params: JSON.stringify({ code: '***', phone: '+447911123456' }),
    phone: '+447911123456',
    outcome: 'ok',
    status: 200,
    error: null,
    duration_ms: 1.5,
    request: 'POST /AuthCodeSending.asmx HTTP/1.1\r\n\r\n<soap/>',
    request_bytes: 40,
    response: 'HTTP/1.1 200\r\n\r\n<ok/>',
    response_bytes: 20,
    ...overrides,
  };
}

/** Waits until `check` holds, looking every `intervalMs` (50), for `timeoutMs` (10 s) at most. */
export function waitUntil(
  check: () => boolean | Promise<boolean>,
  { timeoutMs = 10_000, intervalMs = 50, what = 'the condition' } = {},
): Promise<void> {
  return vi.waitFor(
    async () => {
      if (!(await check())) throw new Error(`timed out waiting for ${what}`);
    },
    { timeout: timeoutMs, interval: intervalMs },
  );
}

/** An SMS delivery as an operation queues it (the `log` provider's), for seeding. */
export const sms = (phone = '+447700900123', expiresAt?: number): NewDelivery => ({
  kind: 'sms',
  provider: 'log',
  recipient: phone,
  payload: { text: 'Your code is 123456', maskedText: 'Your code is ******' },
  ...(expiresAt === undefined ? {} : { expiresAt }),
});

/** A push delivery as an operation queues it (the `log` provider's), for seeding. */
export const push = (topic = 'school-a'): NewDelivery => ({
  kind: 'push',
  provider: 'log',
  recipient: topic,
  payload: { title: 'T', body: 'B', data: { type: 'x' } },
});
