import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers.js';

/**
 * The probes answer machines, not browsers (issue 46, docs/security.md#cross-site-requests-host-names-and-headers):
 * of the security headers they carry only `nosniff` and `no-store`; the console, the API and the
 * help pages keep every one. Read over a real socket, as a probe or a browser reads them.
 */

/** The headers every answer carries whatever the route: the body's, and the connection's. */
const TRANSPORT = ['content-type', 'content-length', 'date', 'connection', 'keep-alive'];

/** The console's security headers (helmet's, plugins/security-headers.ts), HSTS aside. */
const CONSOLE_SET = [
  'content-security-policy',
  'cross-origin-opener-policy',
  'cross-origin-resource-policy',
  'origin-agent-cluster',
  'referrer-policy',
  'x-content-type-options',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-frame-options',
  'x-permitted-cross-domain-policies',
  'x-xss-protection',
];

async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers, redirect: 'manual' });
  await res.arrayBuffer();
  return { status: res.status, headers: Object.fromEntries(res.headers) };
}

describe('the probes carry a probe’s headers, the console keeps its own', () => {
  let plain: TestApp;
  let https: TestApp;
  let plainUrl: string;
  let httpsUrl: string;
  let cookie: string;
  beforeAll(async () => {
    plain = await startTestApp();
    https = await startTestApp({ PUBLIC_BASE_URL: 'https://sms.school.example' });
    plainUrl = await listen(plain);
    httpsUrl = await listen(https);
    cookie = await plain.login();
  });
  afterAll(async () => {
    await plain?.close();
    await https?.close();
  });

  it('/healthz, /readyz and /metrics: exactly nosniff and no-store besides the transport, also over https', async () => {
    for (const [base, host] of [
      [plainUrl, {}],
      [httpsUrl, { host: 'sms.school.example' }],
    ] as const) {
      for (const path of ['/healthz', '/readyz', '/metrics']) {
        const res = await get(`${base}${path}`, host);
        expect(res.status, path).toBe(200);
        expect(Object.keys(res.headers).sort(), `${base}${path}`).toEqual(
          [...TRANSPORT, 'x-content-type-options', 'cache-control'].sort(),
        );
        expect(res.headers['x-content-type-options'], path).toBe('nosniff');
        expect(res.headers['cache-control'], path).toBe('no-store');
        expect(res.headers['content-security-policy'], path).toBeUndefined();
        expect(res.headers['strict-transport-security'], path).toBeUndefined();
      }
    }
  });

  it('a probe refused (/metrics to an address not allowed) carries the same two', async () => {
    const res = await plain.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.9' });
    expect(res.statusCode).toBe(403);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-security-policy']).toBeUndefined();
    expect(res.headers['x-frame-options']).toBeUndefined();
  });

  it('console pages, /api (answered, refused, not found) and the help pages keep every header', async () => {
    const answers = {
      'a console page': await get(`${plainUrl}/history`),
      'the login page': await get(`${plainUrl}/login`),
      '/api answered': await get(`${plainUrl}/api/session`, { cookie }),
      '/api refused (401)': await get(`${plainUrl}/api/session`),
      '/api not found': await get(`${plainUrl}/api/no-such-route`, { cookie }),
      'a help page': await get(`${plainUrl}/AuthCodeSending.asmx`),
    };
    for (const [what, res] of Object.entries(answers)) {
      for (const name of CONSOLE_SET) expect(res.headers[name], `${what}: ${name}`).toBeDefined();
      expect(res.headers['content-security-policy'], what).toContain("frame-ancestors 'none'");
      expect(res.headers['x-content-type-options'], what).toBe('nosniff');
      expect(res.headers['strict-transport-security'], what).toBeUndefined();
    }
    expect(answers['/api answered'].status).toBe(200);
    expect(answers['/api refused (401)'].status).toBe(401);
    expect(answers['/api not found'].status).toBe(404);
    // Over https they add HSTS.
    const host = { host: 'sms.school.example' };
    for (const path of ['/history', '/api/session', '/AuthCodeSending.asmx']) {
      const res = await get(`${httpsUrl}${path}`, host);
      for (const name of CONSOLE_SET) expect(res.headers[name], `${path}: ${name}`).toBeDefined();
      expect(res.headers['strict-transport-security'], path).toBe('max-age=31536000');
    }
  });
});
