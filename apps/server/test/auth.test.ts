import { AUDIT_ACTIONS, CSRF_HEADER, CSRF_HEADER_VALUE, type Session, type User } from '@school/contract';
import type { InjectOptions, LightMyRequestResponse, RouteOptions } from 'fastify';
import { Secret, TOTP } from 'otpauth';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { NOT_LOGGED_IN, ROLE_REFUSED } from '../src/auth/plugin.js';
import { loadSealer } from '../src/secrets/sealer.js';
import { CONSOLE_HEADERS, startTestApp, TEST_ADMIN, type TestApp } from './helpers.js';

const OPERATOR = { username: 'olga', password: 'operator password 1' };

async function addUser(t: TestApp, user: { username: string; password: string; role: 'admin' | 'operator' }) {
  const res = await t.inject({
    method: 'POST',
    url: '/api/users',
    payload: { ...user, displayName: user.username.toUpperCase() },
  });
  expect(res.statusCode).toBe(201);
  return res.json() as User;
}

/** Whether an answer is the access rule's refusal (401 not logged in, 403 role), not the route's own. */
function refusedByRule(res: LightMyRequestResponse, status?: 401 | 403): boolean {
  if (![401, 403].includes(res.statusCode) || (status && res.statusCode !== status)) return false;
  // A HEAD answer has no body to tell by: its status says it.
  if (res.raw.req.method === 'HEAD') return true;
  const detail =
    res.body && res.headers['content-type']?.toString().includes('json') ? res.json().detail : undefined;
  return detail === (res.statusCode === 401 ? NOT_LOGGED_IN : ROLE_REFUSED);
}

/** A request as the console sends it, with a given session cookie (or none). */
function asConsole(t: TestApp, cookie: string | undefined, options: InjectOptions) {
  return t.app.inject({
    ...options,
    headers: { ...CONSOLE_HEADERS, ...(cookie ? { cookie } : {}), ...(options.headers as object) },
  });
}

describe('route access: every route of the route table × anonymous, operator, admin', () => {
  let t: TestApp;
  let operator: string;
  let admin: string;
  beforeAll(async () => {
    t = await startTestApp();
    await addUser(t, { ...OPERATOR, role: 'operator' });
    operator = await t.login(OPERATOR.username, OPERATOR.password);
    admin = await t.login();
  });
  afterAll(() => t.close());

  const concrete = (url: string) =>
    url
      .replace(':name', 'pushNoti')
      .replace(':op', 'pushNoti')
      .replace(/:[A-Za-z]+/g, '1')
      .replace('*', 'x');
  const methodsOf = (route: RouteOptions) => (Array.isArray(route.method) ? route.method : [route.method]);

  it('every route declares who may call it', () => {
    expect(t.app.routeTable.length).toBeGreaterThan(40);
    for (const route of t.app.routeTable) {
      expect(['public', 'operator', 'admin'], `${String(route.method)} ${route.url}`).toContain(
        route.config?.access,
      );
    }
    // What the API says of itself: the rules of the routes that matter most.
    const access = (method: string, url: string) =>
      t.app.routeTable.find((r) => methodsOf(r).includes(method as never) && r.url === url)?.config?.access;
    expect(access('POST', '/api/session')).toBe('public');
    expect(access('GET', '/api/calls')).toBe('operator');
    expect(access('PUT', '/api/schools/:id')).toBe('admin');
    expect(access('PUT', '/api/templates/:id')).toBe('admin');
    expect(access('GET', '/api/users')).toBe('admin');
    // Everyone's for admins of every school, one's own for anyone else (routes/api/audit.ts).
    expect(access('GET', '/api/audit')).toBe('operator');
    expect(access('GET', '/api/docs/')).toBe('operator');
    expect(access('GET', '/api/openapi.json')).toBe('operator');
    expect(access('POST', '/AuthCodeSending.asmx')).toBe('public');
    expect(access('GET', '/healthz')).toBe('public');
  });

  it('anonymous callers get 401, operators 403 on admin routes, and the allowed get through', async () => {
    const failures: string[] = [];
    for (const route of t.app.routeTable) {
      const rule = route.config?.access;
      for (const method of methodsOf(route)) {
        // HEAD twins of GET routes share their rule and answer without a body: the GET covers them.
        if (
          method === 'HEAD' &&
          t.app.routeTable.some((r) => r.url === route.url && methodsOf(r).includes('GET'))
        ) {
          continue;
        }
        const url = concrete(route.url);
        const payload = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method) ? {} : undefined;
        const send = (cookie: string | undefined) =>
          asConsole(t, cookie, {
            method: method as InjectOptions['method'],
            url,
            ...(payload ? { payload } : {}),
          });
        const what = `${method} ${url} (${rule})`;
        // The live tail never ends when let through: only its refusal is checked here.
        const endless = url === '/api/calls/stream';
        // Logging out would end the session the next routes use: checked with a session of its own.
        const own = method === 'DELETE' && url === '/api/session';

        const anonymous = await send(undefined);
        if (rule === 'public' ? refusedByRule(anonymous) : !refusedByRule(anonymous, 401)) {
          failures.push(`${what} anonymous → ${anonymous.statusCode}`);
        }
        if (rule === 'admin') {
          const refused = await send(operator);
          if (!refusedByRule(refused, 403)) failures.push(`${what} operator → ${refused.statusCode}`);
        } else if (!endless) {
          const allowed = await send(own ? await t.login(OPERATOR.username, OPERATOR.password) : operator);
          if (refusedByRule(allowed)) failures.push(`${what} operator → ${allowed.statusCode}`);
        }
        if (!endless) {
          const allowed = await send(own ? await t.login() : admin);
          if (refusedByRule(allowed)) failures.push(`${what} admin → ${allowed.statusCode}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('sends a browser that opens the API documentation without a session to log in, and back', async () => {
    for (const url of ['/api/docs', '/api/docs/', '/api/docs/static/index.html']) {
      const page = await t.app.inject({
        method: 'GET',
        url,
        headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
      });
      expect(page.statusCode, url).toBe(303);
      expect(page.headers.location).toBe(`/login?next=${encodeURIComponent(url)}`);
    }
    // A script asking for data still gets the problem, and other API routes never redirect.
    const script = await t.app.inject({
      method: 'GET',
      url: '/api/docs',
      headers: { accept: 'application/json' },
    });
    expect(script.statusCode).toBe(401);
    const data = await t.app.inject({ method: 'GET', url: '/api/calls', headers: { accept: 'text/html' } });
    expect(data.statusCode).toBe(401);
    expect(data.json().detail).toBe(NOT_LOGGED_IN);
  });
});

describe('sessions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ SESSION_IDLE_TIMEOUT: '30m', SESSION_MAX_AGE: '12h' });
  });
  afterAll(() => t.close());
  afterEach(() => {
    vi.useRealTimers();
  });

  const whoAmI = (cookie: string | undefined) => asConsole(t, cookie, { method: 'GET', url: '/api/session' });

  it('logs in with a cookie that is HttpOnly and SameSite=Strict, and says who is logged in', async () => {
    const res = await asConsole(t, undefined, {
      method: 'POST',
      url: '/api/session',
      payload: { username: 'ADMIN', password: TEST_ADMIN.password },
    });
    expect(res.statusCode).toBe(200);
    const [setCookie = '', browser] = [res.headers['set-cookie'] ?? []].flat();
    expect(setCookie).toMatch(/^session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    // The browser is known from now on (docs/security.md#failed-logins): a sealed cookie, no secret.
    expect(browser).toMatch(
      /^browser=v1\.[A-Za-z0-9_-]+; Max-Age=7776000; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    const session = res.json() as Session;
    expect(session.user).toMatchObject({ username: 'admin', role: 'admin' });
    const cookie = setCookie.split(';')[0];
    expect((await whoAmI(cookie)).json()).toMatchObject({ user: { username: 'admin' } });
    expect((await whoAmI(undefined)).statusCode).toBe(401);
  });

  it('answers an unknown user and a wrong password alike', async () => {
    const wrong = await asConsole(t, undefined, {
      method: 'POST',
      url: '/api/session',
      payload: { username: 'admin', password: 'not the password' },
    });
    const unknown = await asConsole(t, undefined, {
      method: 'POST',
      url: '/api/session',
      payload: { username: 'nobody', password: 'not the password' },
    });
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json().detail).toBe(wrong.json().detail);
    expect(wrong.json().detail).toBe('Wrong username or password.');
  });

  it('gives a new session at every login (no fixation) and ends it at logout', async () => {
    const first = await t.login();
    // A login sent with an existing cookie still gets a new one, and the old one ends.
    const again = await asConsole(t, first, {
      method: 'POST',
      url: '/api/session',
      payload: { username: TEST_ADMIN.username, password: TEST_ADMIN.password },
    });
    const second = [again.headers['set-cookie'] ?? []].flat()[0]?.split(';')[0];
    expect(second).not.toBe(first);
    expect((await whoAmI(first)).statusCode).toBe(401);
    expect((await whoAmI(second)).statusCode).toBe(200);

    const out = await asConsole(t, second, { method: 'DELETE', url: '/api/session' });
    expect(out.statusCode).toBe(204);
    expect(String(out.headers['set-cookie'])).toMatch(/^session=; Max-Age=0;|Expires=Thu, 01 Jan 1970/);
    expect((await whoAmI(second)).statusCode).toBe(401);
    expect((await asConsole(t, second, { method: 'GET', url: '/api/calls' })).statusCode).toBe(401);
  });

  it('ends a session left idle past SESSION_IDLE_TIMEOUT, and any past SESSION_MAX_AGE', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const idle = await t.login();
    const busy = await t.login();
    vi.setSystemTime(Date.now() + 29 * 60_000);
    expect((await whoAmI(busy)).statusCode).toBe(200);
    vi.setSystemTime(Date.now() + 2 * 60_000);
    expect((await whoAmI(idle)).statusCode).toBe(401);
    expect((await whoAmI(busy)).statusCode).toBe(200);
    // Used every 20 minutes, it still ends 12 hours after login.
    for (let h = 0; h < 12 * 3; h++) {
      vi.setSystemTime(Date.now() + 20 * 60_000);
      const res = await whoAmI(busy);
      if (res.statusCode !== 200) {
        expect(h).toBeGreaterThanOrEqual(34);
        return;
      }
    }
    throw new Error('the session outlived SESSION_MAX_AGE');
  });

  it('limits failed logins per username, exactly, under concurrency', async () => {
    const limited = await startTestApp({ LOGIN_LIMIT_PER_USER: '5/15m' });
    try {
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          asConsole(limited, undefined, {
            method: 'POST',
            url: '/api/session',
            payload: { username: 'admin', password: 'a wrong guess' },
          }),
        ),
      );
      const statuses = answers.map((a) => a.statusCode).sort();
      expect(statuses.filter((s) => s === 401)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(15);
      const refused = answers.find((a) => a.statusCode === 429);
      expect(Number(refused?.headers['retry-after'])).toBeGreaterThan(800);
      expect(refused?.json().detail).toBe('Too many failed logins. Try again in 15 minutes.');
      // The right password is refused too, from the address that guessed (login-limits.test.ts).
      const right = await asConsole(limited, undefined, {
        method: 'POST',
        url: '/api/session',
        payload: { username: 'admin', password: TEST_ADMIN.password },
      });
      expect(right.statusCode).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it('limits failed logins per address across usernames', async () => {
    const limited = await startTestApp({ LOGIN_LIMIT_PER_IP: '3/15m' });
    try {
      const statuses: number[] = [];
      for (const username of ['a1', 'a2', 'a3', 'a4']) {
        const res = await asConsole(limited, undefined, {
          method: 'POST',
          url: '/api/session',
          payload: { username, password: 'whatever it is' },
        });
        statuses.push(res.statusCode);
      }
      expect(statuses).toEqual([401, 401, 401, 429]);
    } finally {
      await limited.close();
    }
  });

  it("changing one's password ends one's other sessions, not this one", async () => {
    const mine = await t.login();
    const other = await t.login();
    const wrong = await asConsole(t, mine, {
      method: 'PUT',
      url: '/api/session/password',
      payload: { currentPassword: 'not it at all', newPassword: 'a brand new password' },
    });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().errors.currentPassword).toBe('That is not your current password.');
    const tooShort = await asConsole(t, mine, {
      method: 'PUT',
      url: '/api/session/password',
      payload: { currentPassword: TEST_ADMIN.password, newPassword: 'short' },
    });
    expect(tooShort.statusCode).toBe(400);
    const res = await asConsole(t, mine, {
      method: 'PUT',
      url: '/api/session/password',
      payload: { currentPassword: TEST_ADMIN.password, newPassword: 'a brand new password' },
    });
    expect(res.statusCode).toBe(204);
    expect((await whoAmI(mine)).statusCode).toBe(200);
    expect((await whoAmI(other)).statusCode).toBe(401);
    await expect(t.login()).rejects.toThrow(/401/);
    await t.login(TEST_ADMIN.username, 'a brand new password');
    // Back as it was, for the other tests.
    await asConsole(t, mine, {
      method: 'PUT',
      url: '/api/session/password',
      payload: { currentPassword: 'a brand new password', newPassword: TEST_ADMIN.password },
    });
  });
});

describe('users (admins)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('creates, re-roles, resets and disables users; disabling and resetting end their sessions', async () => {
    const ana = await addUser(t, { username: 'Ana', password: 'ana password 1', role: 'operator' });
    expect(ana).toMatchObject({ username: 'ana', displayName: 'ANA', role: 'operator', disabled: false });
    const dup = await t.inject({
      method: 'POST',
      url: '/api/users',
      payload: { username: 'ana', displayName: 'Ana again', password: 'another password', role: 'admin' },
    });
    expect(dup.statusCode).toBe(409);

    const session = await t.login('ana', 'ana password 1');
    const promoted = await t.inject({
      method: 'PATCH',
      url: `/api/users/${ana.id}`,
      payload: { role: 'admin' },
    });
    expect(promoted.json()).toMatchObject({ role: 'admin' });
    // The new role applies at once to her open session.
    expect((await asConsole(t, session, { method: 'GET', url: '/api/users' })).statusCode).toBe(200);

    const reset = await t.inject({
      method: 'PATCH',
      url: `/api/users/${ana.id}`,
      payload: { password: 'reset by an admin' },
    });
    expect(reset.statusCode).toBe(200);
    expect((await asConsole(t, session, { method: 'GET', url: '/api/session' })).statusCode).toBe(401);

    const again = await t.login('ana', 'reset by an admin');
    const disabled = await t.inject({
      method: 'PATCH',
      url: `/api/users/${ana.id}`,
      payload: { disabled: true },
    });
    expect(disabled.json()).toMatchObject({ disabled: true });
    expect((await asConsole(t, again, { method: 'GET', url: '/api/session' })).statusCode).toBe(401);
    await expect(t.login('ana', 'reset by an admin')).rejects.toThrow(/401/);
  });

  it('never leaves no enabled admin, even when two admins demote each other at once', async () => {
    const list = (await t.inject({ method: 'GET', url: '/api/users' })).json().items as User[];
    const me = list.find((u) => u.username === 'admin') as User;
    const second = await addUser(t, { username: 'bo', password: 'bo password 12', role: 'admin' });
    const bo = await t.login('bo', 'bo password 12');
    const [a, b] = await Promise.all([
      t.inject({ method: 'PATCH', url: `/api/users/${second.id}`, payload: { role: 'operator' } }),
      asConsole(t, bo, { method: 'PATCH', url: `/api/users/${me.id}`, payload: { disabled: true } }),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409]);
    const after = (await t.app.store.users.list()).filter((u) => u.role === 'admin' && !u.disabled);
    expect(after).toHaveLength(1);
    // Put back whichever changed.
    await t.app.store.users.update(me.id, { disabled: false });
    const last = await t.inject({
      method: 'PATCH',
      url: `/api/users/${me.id}`,
      payload: { role: 'operator' },
    });
    if (last.statusCode === 409) expect(last.json().detail).toMatch(/last enabled admin/);
  });
});

describe('the first admin', () => {
  it('is made from ADMIN_USERNAME and ADMIN_PASSWORD at start, once', async () => {
    const t = await startTestApp();
    try {
      const users = await t.app.store.users.list();
      expect(users.map((u) => [u.username, u.role])).toEqual([['admin', 'admin']]);
      expect(users[0]?.password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
      expect((await t.inject({ method: 'GET', url: '/api/setup' })).json()).toEqual({ needed: false });
    } finally {
      await t.close();
    }
  });

  it('is made through the one-time set-up URL the server logs when no user exists', async () => {
    const lines: string[] = [];
    const t = await startTestApp({ ADMIN_USERNAME: '', ADMIN_PASSWORD: '' }, undefined, {
      level: 'warn',
      stream: { write: (line: string) => lines.push(line) },
    });
    try {
      const logged = lines.map((l) => JSON.parse(l)).find((l) => l.setupUrl);
      expect(logged?.setupUrl).toMatch(/^http:\/\/localhost:3000\/setup\?token=[A-Za-z0-9_-]{32}$/);
      const token = new URL(logged.setupUrl).searchParams.get('token') as string;
      expect((await asConsole(t, undefined, { method: 'GET', url: '/api/setup' })).json()).toEqual({
        needed: true,
      });
      const body = { username: 'Head', displayName: 'Head Teacher', password: 'the first password' };
      const forged = await asConsole(t, undefined, {
        method: 'POST',
        url: '/api/setup',
        payload: { ...body, token: `${token}x` },
      });
      expect(forged.statusCode).toBe(403);
      const made = await asConsole(t, undefined, {
        method: 'POST',
        url: '/api/setup',
        payload: { ...body, token },
      });
      expect(made.statusCode).toBe(200);
      expect(made.json()).toMatchObject({
        user: { username: 'head', displayName: 'Head Teacher', role: 'admin' },
      });
      const cookie = String(made.headers['set-cookie']).split(';')[0];
      expect((await asConsole(t, cookie, { method: 'GET', url: '/api/users' })).statusCode).toBe(200);
      const twice = await asConsole(t, undefined, {
        method: 'POST',
        url: '/api/setup',
        payload: { ...body, token },
      });
      expect(twice.statusCode).toBe(409);
    } finally {
      await t.close();
    }
  });
});

describe('cross-site requests, Host and security headers', () => {
  let t: TestApp;
  let cookie: string;
  beforeAll(async () => {
    t = await startTestApp();
    cookie = await t.login();
  });
  afterAll(() => t.close());

  const post = (url: string, headers: Record<string, string>, payload?: string) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: { cookie, ...headers },
      ...(payload !== undefined ? { payload } : {}),
    });

  it('refuses state-changing API requests from another origin, without an Origin, or as simple requests', async () => {
    const before = await t.app.history.count();
    const cases: [string, Record<string, string>, string | undefined][] = [
      ['cross-origin JSON', { origin: 'https://evil.example', 'content-type': 'application/json' }, '{}'],
      [
        'bodyless, cross-origin',
        { origin: 'https://evil.example', [CSRF_HEADER]: CSRF_HEADER_VALUE },
        undefined,
      ],
      ['bodyless, same origin, no custom header', { origin: 'http://localhost:80' }, undefined],
      ['text/plain, same origin', { origin: 'http://localhost:80', 'content-type': 'text/plain' }, 'x'],
      [
        'form, same origin',
        { origin: 'http://localhost:80', 'content-type': 'application/x-www-form-urlencoded' },
        'a=1',
      ],
      ['no Origin nor Referer', { 'content-type': 'application/json' }, '{}'],
      [
        'a Referer from elsewhere',
        { referer: 'https://evil.example/page', 'content-type': 'application/json' },
        '{}',
      ],
    ];
    for (const [what, headers, payload] of cases) {
      const res = await post('/api/operations/pushNoti', headers, payload);
      expect(res.statusCode, what).toBe(403);
      expect(res.headers['content-type'], what).toMatch(/^application\/problem\+json/);
    }
    for (const url of ['/api/deliveries/retry-dead', '/api/deliveries/1/retry']) {
      expect((await post(url, { origin: 'http://localhost:80' })).statusCode).toBe(403);
    }
    // Nothing ran: no call was recorded.
    expect(await t.app.history.count()).toBe(before);
    // The console's own requests pass: same origin with the custom header, or a same-origin Referer.
    expect(
      (
        await post('/api/operations/pushNoti', {
          origin: 'http://localhost:80',
          [CSRF_HEADER]: CSRF_HEADER_VALUE,
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await post(
          '/api/operations/pushNoti',
          { referer: 'http://localhost:80/send', 'content-type': 'application/json' },
          '{}',
        )
      ).statusCode,
    ).toBe(200);
  });

  it('refuses every state-changing API route however its path is spelled', async () => {
    // The rule reads the route the router chose: /%61pi/… reaches the same handler as /api/….
    const spellings = (url: string): string[] => {
      const rest = url.slice('/api'.length);
      const firstEncoded = rest.replace(/^\/([a-z])/, (_m, c: string) => `/%${c.charCodeAt(0).toString(16)}`);
      return [
        `/%61pi${rest}`,
        `/%61%70%69${rest}`,
        `/api${firstEncoded}`,
        `/%2561pi${rest}`,
        `/API${rest}`,
        `/Api${rest.toUpperCase()}`,
        `//api${rest}`,
        `/api/${rest}`,
        `/api/.${rest}`,
        `/x/..${url}`,
        `/api/%2e${rest}`,
        `${url}/`,
      ];
    };
    const concrete = (url: string) => url.replace(':name', 'pushNoti').replace(/:[A-Za-z]+/g, '1');
    const stateChanging = t.app.routeTable.filter(
      (r) =>
        r.url.startsWith('/api/') &&
        (Array.isArray(r.method) ? r.method : [r.method]).some((m) =>
          ['POST', 'PUT', 'PATCH', 'DELETE'].includes(m),
        ),
    );
    expect(stateChanging.length).toBeGreaterThan(15);
    const before = {
      calls: await t.app.history.count(),
      audit: (await t.app.store.audit.search({}, { limit: 1000 })).length,
    };
    const failures: string[] = [];
    let reachedByOtherSpelling = 0;
    for (const route of stateChanging) {
      for (const method of (Array.isArray(route.method) ? route.method : [route.method]).filter((m) =>
        ['POST', 'PUT', 'PATCH', 'DELETE'].includes(m),
      )) {
        const send = (url: string) =>
          t.app.inject({
            method: method as InjectOptions['method'],
            url,
            headers: { cookie, origin: 'https://evil.example', 'content-type': 'text/plain' },
            payload: '{}',
          });
        const plain = await send(concrete(route.url));
        if (plain.statusCode !== 403) failures.push(`${method} ${route.url} → ${plain.statusCode}`);
        for (const url of spellings(concrete(route.url))) {
          const res = await send(url);
          // Refused as the plain form is, or not routed at all (404: nothing ran).
          if (res.statusCode === 403 && res.body === plain.body) reachedByOtherSpelling++;
          else if (res.statusCode !== 404) failures.push(`${method} ${url} → ${res.statusCode} ${res.body}`);
        }
      }
    }
    expect(failures).toEqual([]);
    // The encoded spellings do reach the routes: the rule was checked on them, not skipped.
    expect(reachedByOtherSpelling).toBeGreaterThanOrEqual(stateChanging.length * 2);
    expect(await t.app.history.count()).toBe(before.calls);
    expect((await t.app.store.audit.search({}, { limit: 1000 })).length).toBe(before.audit);
  });

  it('answers only for its own host names (no DNS rebinding), /healthz for any', async () => {
    const rebound = await t.app.inject({
      method: 'GET',
      url: '/api/session',
      headers: { host: 'attacker.example' },
    });
    expect(rebound.statusCode).toBe(421);
    const asmx = await t.app.inject({
      method: 'GET',
      url: '/AuthCodeSending.asmx?wsdl',
      headers: { host: 'attacker.example:3000' },
    });
    expect(asmx.statusCode).toBe(421);
    for (const host of [
      'localhost:3000',
      '127.0.0.1:3000',
      '[::1]:3000',
      'LOCALHOST',
      'localhost.',
      'localhost:',
    ]) {
      expect(
        (await t.app.inject({ method: 'GET', url: '/AuthCodeSending.asmx?wsdl', headers: { host } }))
          .statusCode,
      ).toBe(200);
    }
    // Not a Host as RFC 9110 writes one: user info, text after an IPv6 literal, a path, a bad port.
    for (const host of [
      '127.0.0.1:80@evil.example',
      'localhost@evil.example',
      '[::1]evil.example',
      '[::1]:80evil.example',
      'localhost/evil.example',
      'localhost:80:81',
      'localhost:http',
      'local host',
    ]) {
      const res = await t.app.inject({ method: 'GET', url: '/api/session', headers: { host } });
      expect(res.statusCode, host).toBe(421);
    }
    expect(
      (await t.app.inject({ method: 'GET', url: '/healthz', headers: { host: '10.1.2.3:3000' } })).statusCode,
    ).toBe(200);
    const configured = await startTestApp({ PUBLIC_BASE_URL: 'https://sms.school.example' });
    try {
      const res = await configured.app.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx?wsdl',
        headers: { host: 'sms.school.example' },
      });
      expect(res.statusCode).toBe(200);
    } finally {
      await configured.close();
    }
  });

  it('sends a strict CSP and the other security headers on the API, the console and help pages, not on operation answers', async () => {
    const api = await t.app.inject({ method: 'GET', url: '/api/session', headers: { cookie } });
    const page = await t.app.inject({ method: 'GET', url: '/history' });
    const help = await t.app.inject({ method: 'GET', url: '/AuthCodeSending.asmx' });
    for (const res of [api, page, help]) {
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('same-origin');
      expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    }
    // The help page's one inline style sheet is allowed by its hash.
    expect(String(help.headers['content-security-policy'])).toMatch(
      /style-src 'self' 'sha256-[A-Za-z0-9+/]+=*'/,
    );
    const soap = await t.app.inject({ method: 'GET', url: '/PushNotificationMobile.asmx/pushNoti' });
    expect(soap.statusCode).toBe(200);
    expect(soap.headers['content-security-policy']).toBeUndefined();
    expect(soap.headers['x-content-type-options']).toBeUndefined();
    // HSTS only where the server is reached over https.
    expect(api.headers['strict-transport-security']).toBeUndefined();
    const https = await startTestApp({ PUBLIC_BASE_URL: 'https://sms.school.example' });
    try {
      const host = { host: 'sms.school.example' };
      for (const url of ['/history', '/AuthCodeSending.asmx']) {
        const res = await https.app.inject({ method: 'GET', url, headers: host });
        expect(res.headers['strict-transport-security'], url).toBe('max-age=31536000');
        expect(res.headers['x-frame-options'], url).toBe('SAMEORIGIN');
      }
      const answer = await https.app.inject({
        method: 'GET',
        url: '/PushNotificationMobile.asmx/pushNoti',
        headers: host,
      });
      expect(answer.headers['strict-transport-security']).toBeUndefined();
    } finally {
      await https.close();
    }
  });
});

describe('audit log', () => {
  it("records a refused console Send with the call's verdict, in History's words", async () => {
    const t = await startTestApp();
    try {
      const answer = await t.inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: '482113', phone: '12' },
      });
      expect(answer.statusCode).toBe(400);
      const list = await t.inject({ method: 'GET', url: '/api/audit?action=send' });
      const [sent] = list.json().items as { target: string; details: Record<string, unknown> }[];
      expect(sent?.target).toBe(`call ${answer.json().callId} (AuthCode)`);
      expect(sent?.details).toMatchObject({ result: 'Refused: invalid phone (400)', status: 400 });
    } finally {
      await t.close();
    }
  });

  it('records console actions with user, address, target and what changed, for admins to read', async () => {
    const t = await startTestApp();
    try {
      await t.inject({
        method: 'POST',
        url: '/api/session',
        payload: { username: 'admin', password: 'a wrong one, once' },
        remoteAddress: '203.0.113.9',
      });
      const school = await t.inject({
        method: 'POST',
        url: '/api/schools',
        payload: { name: 'North', baseUrl: 'https://north.example.org', topicKey: 'north' },
      });
      const id = school.json().id as number;
      await t.inject({
        method: 'PUT',
        url: `/api/schools/${id}`,
        payload: { name: 'North', baseUrl: 'https://north.example.org', topicKey: 'north', allowedIps: [] },
      });
      await t.inject({
        method: 'PUT',
        url: `/api/schools/${id}`,
        payload: {
          name: 'North High',
          baseUrl: 'https://north.example.org',
          topicKey: 'north',
          allowedIps: ['203.0.113.0/24'],
        },
      });
      await t.inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: '482113', phone: '+447911123456' },
      });
      await t.inject({ method: 'POST', url: '/api/deliveries/retry-dead' });
      await t.inject({ method: 'DELETE', url: `/api/schools/${id}` });

      const list = await t.inject({ method: 'GET', url: '/api/audit?limit=50' });
      expect(list.statusCode).toBe(200);
      const items = list.json().items as {
        action: string;
        username: string;
        ip: string;
        target: string;
        details: Record<string, unknown>;
      }[];
      expect(items.map((i) => i.action)).toEqual([
        'school-delete',
        'delivery-retry-dead',
        'send',
        'school-update',
        'school-update',
        'school-create',
        'login-failed',
        'login',
      ]);
      expect(items.find((i) => i.action === 'login-failed')).toMatchObject({
        userId: 1,
        username: 'admin',
        ip: '203.0.113.9',
        details: { reason: 'wrong password' },
      });
      const [changed] = items.filter((i) => i.action === 'school-update');
      expect(changed).toMatchObject({
        username: 'admin',
        target: `school ${id} (North High)`,
        details: {
          name: { from: 'North', to: 'North High' },
          allowedIps: { from: [], to: ['203.0.113.0/24'] },
        },
      });
      // The auth code sent from the console is masked in the audit log too.
      const sent = items.find((i) => i.action === 'send');
      expect(JSON.stringify(sent)).not.toContain('482113');
      // Its result is what was true when it was sent: answered, the SMS queued (not yet sent).
      expect(sent?.details).toMatchObject({
        result: 'Answered · SMS queued',
        status: 200,
        params: { code: '***', phone: '+447911123456' },
      });
      expect(sent?.details).not.toHaveProperty('outcome');

      const filtered = await t.inject({ method: 'GET', url: '/api/audit?action=school-update&limit=1' });
      expect(filtered.json().items).toHaveLength(1);
      const next = await t.inject({
        method: 'GET',
        url: `/api/audit?action=school-update&limit=1&cursor=${filtered.json().nextCursor}`,
      });
      expect(next.json().items).toHaveLength(1);
      expect(next.json().nextCursor).toBeNull();
    } finally {
      await t.close();
    }
  });

  it('has an entry for every kind of console action', async () => {
    const lines: string[] = [];
    const t = await startTestApp({ ADMIN_USERNAME: '', ADMIN_PASSWORD: '' }, undefined, {
      level: 'warn',
      stream: { write: (line: string) => lines.push(line) },
    });
    try {
      const token = new URL(
        lines.map((l) => JSON.parse(l)).find((l) => l.setupUrl).setupUrl,
      ).searchParams.get('token');
      const setup = await asConsole(t, undefined, {
        method: 'POST',
        url: '/api/setup',
        payload: {
          token,
          username: TEST_ADMIN.username,
          displayName: 'Admin',
          password: TEST_ADMIN.password,
        },
      });
      expect(setup.statusCode).toBe(200);
      const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(100, 'x')]);
      const steps: [string, InjectOptions][] = [
        [
          'school-create',
          {
            method: 'POST',
            url: '/api/schools',
            payload: { name: 'S', baseUrl: 'https://s.example.org', topicKey: 's' },
          },
        ],
        [
          'school-update',
          {
            method: 'PUT',
            url: '/api/schools/1',
            payload: { name: 'S2', baseUrl: 'https://s.example.org', topicKey: 's' },
          },
        ],
        [
          'template-create',
          { method: 'POST', url: '/api/templates', payload: { type: 'news', title: 'T', body: 'B' } },
        ],
        [
          'template-update',
          { method: 'PUT', url: '/api/templates/3', payload: { type: 'news', title: 'T2', body: 'B' } },
        ],
        ['template-delete', { method: 'DELETE', url: '/api/templates/3' }],
        [
          'book-upload',
          {
            method: 'PUT',
            url: '/api/books/2026-1/7B',
            headers: { 'content-type': 'application/pdf' },
            payload: pdf,
          },
        ],
        ['book-delete', { method: 'DELETE', url: '/api/books/1' }],
        ['send', { method: 'POST', url: '/api/operations/pushNoti' }],
        ['delivery-retry-dead', { method: 'POST', url: '/api/deliveries/retry-dead' }],
        [
          'user-create',
          {
            method: 'POST',
            url: '/api/users',
            payload: { username: 'op', displayName: 'Op', password: 'op password 12', role: 'operator' },
          },
        ],
        ['user-update', { method: 'PATCH', url: '/api/users/2', payload: { role: 'admin' } }],
        ['school-delete', { method: 'DELETE', url: '/api/schools/1' }],
        [
          'password-change',
          {
            method: 'PUT',
            url: '/api/session/password',
            payload: { currentPassword: TEST_ADMIN.password, newPassword: TEST_ADMIN.password },
          },
        ],
        ['privacy-report', { method: 'GET', url: '/api/privacy/report?phone=%2B447400123456' }],
        ['privacy-erase', { method: 'POST', url: '/api/privacy/erase', payload: { phone: '+447400123456' } }],
      ];
      for (const [action, options] of steps) {
        const res = await t.inject(options);
        expect(res.statusCode, `${action}: ${res.body}`).toBeLessThan(300);
      }
      // A dead delivery retried one by one.
      const sms = await t.inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: '1234', phone: '+447911123456' },
      });
      const callId = sms.json().id as number;
      // Sent at once through the log provider; then made dead as a failed one would be, with
      // its sealed text still there (a settled SMS keeps only the masked text and cannot be resent).
      await t.app.outbox.idle();
      const [delivery] = await t.app.outbox.deliveries.search({ callId }, { limit: 1 });
      await t.app.store.db
        .updateTable('deliveries')
        .set({
          status: 'dead',
          secret: loadSealer({ dataDir: t.dataDir }).seal(
            'Your verification code is 1234',
            delivery?.idempotency_key ?? '',
          ),
        })
        .where('id', '=', delivery?.id ?? 0)
        .execute();
      expect(
        (await t.inject({ method: 'POST', url: `/api/deliveries/${delivery?.id}/retry` })).statusCode,
      ).toBe(200);
      await asConsole(t, undefined, {
        method: 'POST',
        url: '/api/session',
        payload: { username: 'admin', password: 'wrong, once more' },
      });
      const session = await t.login();
      await asConsole(t, session, { method: 'DELETE', url: '/api/session' });

      // The second factor: on, off, on again, reset by an admin.
      for (const step of ['on', 'off', 'on'] as const) {
        if (step === 'off') {
          const off = await t.inject({
            method: 'DELETE',
            url: '/api/session/totp',
            payload: { password: TEST_ADMIN.password },
          });
          expect(off.statusCode).toBe(204);
          continue;
        }
        const { secret } = (
          await t.inject({
            method: 'POST',
            url: '/api/session/totp',
            payload: { password: TEST_ADMIN.password },
          })
        ).json();
        const code = TOTP.generate({ secret: Secret.fromBase32(secret) });
        expect(
          (await t.inject({ method: 'PUT', url: '/api/session/totp', payload: { code } })).statusCode,
        ).toBe(200);
      }
      expect((await t.inject({ method: 'DELETE', url: '/api/users/1/totp' })).statusCode).toBe(200);

      const seen = new Set((await t.app.store.audit.search({}, { limit: 500 })).map((r) => r.action));
      // Single sign-on's are in sso.test.ts, the command line's in admin-cli.test.ts.
      const elsewhere = ['sso-login', 'sso-refused', 'sessions-revoke'];
      expect([...AUDIT_ACTIONS].filter((a) => !seen.has(a) && !elsewhere.includes(a))).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
