/**
 * Failed logins by strangers neither open guessing wider than a closed username would nor close a
 * username to its owner (docs/security.md#failed-logins): the address that failed is closed, the
 * username is slowed, and a browser its owner logged in from before is held only to its own
 * failures.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { CONSOLE_HEADERS, TEST_ADMIN, type TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

const WRONG = 'a wrong guess at it';

describe.each(DIALECTS)('failed logins from strangers (%s)', (dialect) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  /** A password login from `address`, with the browser's cookie when given one. */
  const logIn = (from: string, password: string, browser?: string, username: string = TEST_ADMIN.username) =>
    (t as TestApp).app.inject({
      method: 'POST',
      url: '/api/session',
      remoteAddress: from,
      headers: { ...CONSOLE_HEADERS, ...(browser ? { cookie: browser } : {}) },
      payload: { username, password },
    });
  /** The browser cookie a successful login set (`name=value`). */
  const browserCookie = (res: LightMyRequestResponse) => {
    const cookie = res.cookies.find((c) => c.name === 'browser');
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.sameSite).toBe('Strict');
    return `browser=${cookie?.value}`;
  };
  const reasons = async () =>
    (await (t as TestApp).app.store.audit.search({ action: 'login-failed' }, { limit: 50 })).map(
      (r) => JSON.parse(r.details ?? '{}') as { reason: string; limit?: string },
    );

  it('closes the address that failed, not the username: the right password from elsewhere logs in', async () => {
    t = await startTestAppOn(dialect, { LOGIN_LIMIT_PER_USER: '5/15m' });
    const answers = await Promise.all(Array.from({ length: 12 }, () => logIn('203.0.113.9', WRONG)));
    expect(answers.filter((a) => a.statusCode === 401)).toHaveLength(5);
    expect(answers.filter((a) => a.statusCode === 429)).toHaveLength(7);
    // The address that guessed stays closed to the username, even to the right password.
    expect((await logIn('203.0.113.9', TEST_ADMIN.password)).statusCode).toBe(429);
    // The owner, at another address that has not failed, is only slowed: one attempt per window.
    expect((await logIn('198.51.100.7', TEST_ADMIN.password)).statusCode).toBe(200);
    expect((await reasons()).filter((r) => r.reason === 'too many failed logins')[0]?.limit).toBe(
      'username from this address',
    );
  });

  it('slows a username guessed from many addresses to one attempt per window, and lets its own browser in', async () => {
    t = await startTestAppOn(dialect, { LOGIN_LIMIT_PER_USER: '5/15m' });
    // The owner logged in from this browser before.
    const browser = browserCookie(await logIn('198.51.100.7', TEST_ADMIN.password));

    // Guesses from five addresses fill the username's window; a sixth address gets the one slowed
    // attempt; the next addresses wait for the window, the owner too from a new browser.
    for (let i = 1; i <= 6; i++) expect((await logIn(`203.0.113.${i}`, WRONG)).statusCode).toBe(401);
    const waiting = await logIn('203.0.113.7', WRONG);
    expect(waiting.statusCode).toBe(429);
    expect(Number(waiting.headers['retry-after'])).toBeGreaterThan(14 * 60);
    expect((await logIn('192.0.2.50', TEST_ADMIN.password)).statusCode).toBe(429);
    expect((await reasons())[0]?.limit).toBe('username');

    // Seven guesses in this window, where a closed username would have allowed five: guessing is
    // no faster than one attempt more per window.
    // The owner's own browser is not held to the strangers' failures, from any address.
    const owner = await logIn('192.0.2.50', TEST_ADMIN.password, browser);
    expect(owner.statusCode).toBe(200);
    // A success forgets the username's failures: strangers start again from none.
    expect((await logIn('203.0.113.8', WRONG)).statusCode).toBe(401);
  });

  it("an address past its own limit stays closed to strangers' browsers, not to the owner's", async () => {
    t = await startTestAppOn(dialect, { LOGIN_LIMIT_PER_IP: '3/15m' });
    const browser = browserCookie(await logIn('198.51.100.7', TEST_ADMIN.password));
    // A school's shared address: someone there guesses at three other usernames.
    for (const username of ['a1', 'a2', 'a3']) {
      expect((await logIn('192.0.2.1', WRONG, undefined, username)).statusCode).toBe(401);
    }
    expect((await logIn('192.0.2.1', WRONG, undefined, 'a4')).statusCode).toBe(429);
    expect((await logIn('192.0.2.1', TEST_ADMIN.password)).statusCode).toBe(429);
    expect((await reasons())[0]?.limit).toBe('address');
    // The admin, on the browser they used before, behind the same address.
    expect((await logIn('192.0.2.1', TEST_ADMIN.password, browser)).statusCode).toBe(200);
  });

  it("behind a proxy, a school's one address: strangers there never close the owner's known browser", async () => {
    t = await startTestAppOn(dialect, { TRUST_PROXY: '127.0.0.1', LOGIN_LIMIT_PER_USER: '5/15m' });
    /** Through the school's proxy: every member of staff comes from 192.0.2.1. */
    const viaProxy = (password: string, browser?: string) =>
      (t as TestApp).app.inject({
        method: 'POST',
        url: '/api/session',
        remoteAddress: '127.0.0.1',
        headers: {
          ...CONSOLE_HEADERS,
          'x-forwarded-for': '192.0.2.1',
          ...(browser ? { cookie: browser } : {}),
        },
        payload: { username: TEST_ADMIN.username, password },
      });
    const browser = browserCookie(await viaProxy(TEST_ADMIN.password));
    // Someone else at the school guesses at the admin's password until the address is closed to it.
    const guesses = await Promise.all(Array.from({ length: 7 }, () => viaProxy(WRONG)));
    expect(guesses.filter((a) => a.statusCode === 401)).toHaveLength(5);
    expect((await viaProxy(TEST_ADMIN.password)).statusCode).toBe(429);
    // The owner, on the browser they logged in from, at the same address: in.
    expect((await viaProxy(TEST_ADMIN.password, browser)).statusCode).toBe(200);
  });

  it('holds a browser to its own failures, and a cookie opens only for its user, unaltered', async () => {
    t = await startTestAppOn(dialect, { LOGIN_LIMIT_PER_USER: '3/15m' });
    const browser = browserCookie(await logIn('198.51.100.7', TEST_ADMIN.password));
    // Guesses from the owner's browser itself (stolen, or the owner mistyping) are limited as
    // any: three from wherever they come, then even the right password waits.
    for (const from of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      expect((await logIn(from, WRONG, browser)).statusCode).toBe(401);
    }
    const closed = await logIn('203.0.113.4', TEST_ADMIN.password, browser);
    expect(closed.statusCode).toBe(429);
    expect((await reasons())[0]?.limit).toBe('browser');

    // An altered cookie is no browser: strangers' failures count against its holder.
    const value = browser.slice('browser='.length);
    const altered = `browser=${value.slice(0, -2)}${value.endsWith('A') ? 'B' : 'A'}${value.slice(-1)}`;
    for (const from of ['203.0.113.5', '203.0.113.6', '203.0.113.7']) {
      expect((await logIn(from, WRONG)).statusCode).toBe(401);
    }
    expect((await logIn('203.0.113.8', WRONG)).statusCode).toBe(401);
    expect((await logIn('192.0.2.9', TEST_ADMIN.password, altered)).statusCode).toBe(429);
  });
});
