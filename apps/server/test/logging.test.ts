/**
 * The log as a person at a terminal and a log collector read it (src/logging.ts): one line per
 * request, every request in JSON, only what an operator needs in readable mode; readable lines and
 * a ready banner on a terminal.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { type LogFormat, logFormat, readyBanner } from '../src/logging.js';
import { TEST_ADMIN, tempDataDir, waitUntil } from './helpers.js';
import { startServerProcess } from './server-process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The app with its log written to an array of parsed JSON lines, as `format` would choose them. */
async function appLogging(format: LogFormat) {
  const data = tempDataDir();
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const config = loadConfig({
    DATA_DIR: data.dir,
    LOG_LEVEL: 'info',
    SQLITE_SYNCHRONOUS: 'NORMAL',
    ADMIN_USERNAME: TEST_ADMIN.username,
    ADMIN_PASSWORD: TEST_ADMIN.password,
  });
  const app = await buildApp(config, { logger: { stream }, logFormat: format, rollups: false });
  app.get('/boom', { config: { access: 'public' } }, async () => {
    throw new Error('broken on purpose');
  });
  await app.ready();
  cleanups.push(async () => {
    await app.close();
    data.remove();
  });
  const requestLines = () =>
    lines.filter((l) => l.msg === 'request completed' || l.msg === 'incoming request');
  return { app, lines, requestLines };
}

describe('the log', () => {
  it('is readable on a terminal and JSON otherwise, unless LOG_FORMAT says', () => {
    expect(logFormat('auto', true)).toBe('pretty');
    expect(logFormat('auto', false)).toBe('json');
    expect(logFormat('json', true)).toBe('json');
    expect(logFormat('pretty', false)).toBe('pretty');
  });

  it('writes one line per request in JSON, every request, with the auth code and the phone masked', async () => {
    const { app, requestLines } = await appLogging('json');
    await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'probe-1' } });
    await app.inject({
      method: 'GET',
      url: '/AuthCodeSending.asmx/AuthCode?code=482913&phone=%2B447911123456',
    });
    const lines = requestLines();
    expect(lines.map((l) => l.msg)).toEqual(['request completed', 'request completed']);
    expect(lines.map((l) => (l.req as { url: string }).url)).toEqual([
      '/healthz',
      '/AuthCodeSending.asmx/AuthCode?code=***&phone=%2B44•••••••456',
    ]);
    expect(lines.map((l) => (l.res as { statusCode: number }).statusCode)).toEqual([200, 200]);
    // A probe's logger is made only as it writes (lazyRequestLogger), its request id bound all the same.
    expect(lines[0]?.reqId).toBe('probe-1');
    expect(JSON.stringify(lines)).not.toContain('482913');
    expect(JSON.stringify(lines)).not.toContain('7911123456');
  });

  it('keeps only errors and slow requests at info for a person, the rest at debug', async () => {
    const { app, requestLines, lines } = await appLogging('pretty');
    for (let i = 0; i < 5; i++) await app.inject({ method: 'GET', url: '/healthz' });
    expect(requestLines()).toEqual([]);
    await app.inject({ method: 'GET', url: '/boom' });
    expect(requestLines()).toEqual([
      expect.objectContaining({ level: 30, msg: 'request completed', res: { statusCode: 500 } }),
    ]);
    // The error itself is still logged, as Fastify logs it.
    expect(
      lines.some((l) => l.level === 50 && (l.err as { message?: string })?.message === 'broken on purpose'),
    ).toBe(true);
  });

  it('greets a person at a terminal with the console, the services and the data folder', async () => {
    const banner = readyBanner({
      baseUrl: 'http://localhost:3000',
      services: [{ title: 'Authentication code sending', path: '/AuthCodeSending.asmx' }],
      dataDir: './data',
    });
    expect(banner.split('\n')).toEqual([
      '',
      'School Messaging and Book Service is ready',
      '  Console                      http://localhost:3000/',
      '  Authentication code sending  http://localhost:3000/AuthCodeSending.asmx',
      '  Data                         ./data',
      '',
    ]);
    const server = await startServerProcess({ LOG_FORMAT: 'pretty', LOG_LEVEL: 'info' });
    cleanups.push(() => server.stop());
    const output = server.output();
    expect(output).toContain('School Messaging and Book Service is ready');
    expect(output).toContain(`  Console                      ${server.url}/`);
    expect(output).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: ready$/m);
    // Readable lines, not JSON.
    expect(output).not.toMatch(/^\{"level"/m);
  });

  it('gives a person the set-up URL on a line of its own, again in the banner, and a last line at a stop', async () => {
    expect(
      readyBanner({
        baseUrl: 'http://localhost:3000',
        services: [],
        dataDir: './data',
        setupUrl: 'http://x/setup?token=t',
      })
        .split('\n')
        .slice(-4),
    ).toEqual([
      '',
      'No staff user exists yet. Open this link within an hour to create the first admin:',
      '  http://x/setup?token=t',
      '',
    ]);
    // No admin yet: the server makes a set-up link.
    const server = await startServerProcess(
      { LOG_FORMAT: 'pretty', LOG_LEVEL: 'info', ADMIN_USERNAME: '', ADMIN_PASSWORD: '' },
      { until: 'listening' },
    );
    cleanups.push(() => server.stop());
    await waitUntil(() => server.output().includes('is ready'), { what: 'the banner' });
    const urls = server.output().match(/^ +(http:\/\/\S+\/setup\?token=[\w-]+)$/gm) ?? [];
    // Once under the log's warning, once in the banner: the same link, alone on its line.
    expect(urls).toHaveLength(2);
    expect(new Set(urls.map((u) => u.trim())).size).toBe(1);
    expect(server.output()).not.toContain('setupUrl');
    server.child.kill('SIGINT');
    expect(await server.exited).toBe(0);
    expect(server.output().trimEnd()).toMatch(/INFO: stopped: closing took \d+ ms$/);
  });
});
