/**
 * A long-lived response ends with its session (docs/security.md#staff-accounts-and-sessions):
 * History's live feed carries phone numbers, and kept sending them after a logout, a user being
 * disabled, or the session's maximum age; a book's download went on to its last byte. Each case: open the feed, end the session, and the
 * stream closes within a few seconds, with no call sent after.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SESSION_RECHECK_MS } from '../src/auth/session-watch.js';
import { CONSOLE_HEADERS, startTestApp, type TestApp } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function listening(env: Record<string, string> = {}): Promise<{ t: TestApp; base: string }> {
  const t = await startTestApp(env);
  cleanups.push(() => t.close());
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return { t, base: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}` };
}

/** Opens the live feed with `cookie`; answers what it has received and when it ended. */
function openFeed(base: string, cookie: string) {
  const feed = {
    text: '',
    ended: undefined as number | undefined,
    opened: undefined as Promise<void> | undefined,
  };
  feed.opened = new Promise<void>((resolve, reject) => {
    http
      .get(`${base}/api/calls/stream`, { headers: { cookie } }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          feed.text += chunk;
        });
        res.on('end', () => {
          feed.ended = Date.now();
        });
        res.on('error', () => {
          feed.ended = Date.now();
        });
        resolve();
      })
      .on('error', reject);
  });
  return feed;
}

const calls = (text: string) => text.split('\n').filter((l) => l.startsWith('event: call')).length;

async function endsWithin(feed: { ended: number | undefined }, from: number, ms: number): Promise<number> {
  const deadline = from + ms;
  while (feed.ended === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(feed.ended, 'the feed did not end').toBeDefined();
  return (feed.ended as number) - from;
}

const call = (base: string) =>
  fetch(`${base}/AuthCodeSending.asmx/AuthCode?code=1&phone=%2B447911123456`).then((r) => r.text());

describe('a live feed ends with its session', () => {
  it('after a logout', async () => {
    const { t, base } = await listening();
    const cookie = await t.login();
    const feed = openFeed(base, cookie);
    await feed.opened;
    await call(base);
    await new Promise((r) => setTimeout(r, 200));
    expect(calls(feed.text)).toBe(1);
    const loggedOut = await fetch(`${base}/api/session`, {
      method: 'DELETE',
      headers: { ...CONSOLE_HEADERS, origin: base, cookie },
    });
    expect(loggedOut.status).toBeLessThan(300);
    const at = Date.now();
    expect(await endsWithin(feed, at, 3 * SESSION_RECHECK_MS)).toBeLessThanOrEqual(SESSION_RECHECK_MS + 1500);
    await call(base);
    await new Promise((r) => setTimeout(r, 200));
    expect(calls(feed.text)).toBe(1);
  });

  it('after its user is disabled by an admin', async () => {
    const { t, base } = await listening();
    const created = await t.inject({
      method: 'POST',
      url: '/api/users',
      payload: { username: 'ana', displayName: 'Ana', password: 'operator password 1', role: 'operator' },
    });
    expect(created.statusCode).toBe(201);
    const feed = openFeed(base, await t.login('ana', 'operator password 1'));
    await feed.opened;
    const disabled = await t.inject({
      method: 'PATCH',
      url: `/api/users/${created.json().id}`,
      payload: { disabled: true },
    });
    expect(disabled.statusCode).toBe(200);
    expect(await endsWithin(feed, Date.now(), 3 * SESSION_RECHECK_MS)).toBeLessThanOrEqual(
      SESSION_RECHECK_MS + 1500,
    );
  });

  it('past SESSION_MAX_AGE, however busy the feed', async () => {
    const { t, base } = await listening({ SESSION_MAX_AGE: '3s' });
    const feed = openFeed(base, await t.login());
    const opened = Date.now();
    await feed.opened;
    const elapsed = await endsWithin(feed, opened, 3000 + 3 * SESSION_RECHECK_MS);
    expect(elapsed).toBeGreaterThanOrEqual(2500);
  });
});

describe('a book download ends with its session', () => {
  it('after a logout, long before the book is through', async () => {
    const { t, base } = await listening();
    const size = 20 * 1024 * 1024;
    const book = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(size - 9, 'x')]);
    const uploaded = await t.inject({
      method: 'PUT',
      url: '/api/books/2026-1/7B?filename=maths.pdf',
      headers: { 'content-type': 'application/pdf' },
      payload: book,
    });
    expect(uploaded.statusCode).toBe(200);
    const cookie = await t.login();
    // A slow reader: the first bytes, then nothing read while the session ends.
    const download = { received: 0, ended: undefined as number | undefined, complete: false };
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http
        .get(`${base}/api/books/${uploaded.json().id}/file`, { headers: { cookie } }, resolve)
        .on('error', reject);
    });
    expect(res.statusCode).toBe(200);
    res.on('data', (chunk: Buffer) => {
      download.received += chunk.length;
    });
    // Nothing more read after the first bytes (20 MB cross the loopback in well under 100 ms).
    res.once('data', () => res.pause());
    res.on('end', () => {
      download.complete = true;
    });
    res.on('close', () => {
      download.ended = Date.now();
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(res.isPaused()).toBe(true);
    const loggedOut = await fetch(`${base}/api/session`, {
      method: 'DELETE',
      headers: { ...CONSOLE_HEADERS, origin: base, cookie },
    });
    expect(loggedOut.status).toBeLessThan(300);
    const at = Date.now();
    // The server cuts the download within its re-check; then what was on its way is read out.
    await new Promise((r) => setTimeout(r, SESSION_RECHECK_MS + 1500));
    res.resume();
    expect(await endsWithin(download, at, 5000)).toBeLessThanOrEqual(5000);
    expect(download.complete).toBe(false);
    expect(download.received).toBeLessThan(size);
  }, 30_000);
});
