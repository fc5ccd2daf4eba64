import type { Session, User } from '@school/contract';
import type { InjectOptions } from 'fastify';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchTotp, newTotpSecret, otpauthUrl, TOTP_PERIOD_S, totpStep } from '../src/auth/totp.js';
import { CONSOLE_HEADERS, TEST_ADMIN, type TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

/** The code an authenticator app shows for `secret` at `at` (epoch ms). */
const appCode = (secret: string, at: number) =>
  TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: at });
/** The code an authenticator app shows for `secret`, `steps` periods from now. */
const codeFor = (secret: string, steps = 0) => appCode(secret, Date.now() + steps * TOTP_PERIOD_S * 1000);

describe('TOTP (RFC 6238)', () => {
  // RFC 6238 appendix B, SHA-1: the seed is the ASCII of "12345678901234567890"; 6 digits are the
  // last 6 of the RFC's 8.
  const seed = Secret.fromLatin1('12345678901234567890').base32;
  it.each([
    [59, '287082'],
    [1111111109, '081804'],
    [1111111111, '050471'],
    [1234567890, '005924'],
    [2000000000, '279037'],
    [20000000000, '353130'],
  ])('at %i s the code is %s', (seconds, code) => {
    expect(appCode(seed, seconds * 1000)).toBe(code);
    expect(matchTotp(seed, code, seconds * 1000)).toBe(Math.floor(seconds / 30));
  });

  it('takes the step before and after (a clock a little off), not two away', () => {
    const at = 1_700_000_000_000;
    const step = totpStep(at);
    const period = TOTP_PERIOD_S * 1000;
    expect(matchTotp(seed, appCode(seed, at - period), at)).toBe(step - 1);
    expect(matchTotp(seed, appCode(seed, at + period), at)).toBe(step + 1);
    expect(matchTotp(seed, appCode(seed, at + 2 * period), at)).toBeUndefined();
    expect(matchTotp(seed, appCode(seed, at - 2 * period), at)).toBeUndefined();
    expect(matchTotp(seed, '12345', at)).toBeUndefined();
    expect(matchTotp(seed, '１２３４５６', at)).toBeUndefined();
    expect(matchTotp('not base32!', appCode(seed, at), at)).toBeUndefined();
    const code = appCode(seed, at);
    expect(matchTotp(seed, `${code.slice(0, 3)} ${code.slice(3)}`, at)).toBe(step);
  });

  it('makes 160-bit secrets in base32 and writes the otpauth URL apps read', () => {
    const secret = newTotpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(Secret.fromBase32(secret).bytes).toHaveLength(20);
    expect(newTotpSecret()).not.toBe(secret);
    const url = new URL(otpauthUrl({ issuer: 'School console', account: 'ada', secret: 'JBSWY3DPEHPK3PXP' }));
    expect(url.protocol).toBe('otpauth:');
    expect(url.host).toBe('totp');
    expect(decodeURIComponent(url.pathname)).toBe('/School console:ada');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      secret: 'JBSWY3DPEHPK3PXP',
      issuer: 'School console',
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
    });
  });
});

describe.each(DIALECTS)('a second factor for password logins (%s)', (dialect) => {
  let t: TestApp;
  const OPERATOR = { username: 'olga', password: 'operator password 1' };
  let olga: User;
  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    const res = await t.inject({
      method: 'POST',
      url: '/api/users',
      payload: { ...OPERATOR, displayName: 'Olga', role: 'operator' },
    });
    olga = res.json() as User;
  });
  afterAll(() => t.close());

  /** POST /api/session as the console sends it. */
  const logIn = (body: Record<string, string>) =>
    t.app.inject({ method: 'POST', url: '/api/session', headers: CONSOLE_HEADERS, payload: body });
  const as = (cookie: string, options: InjectOptions) =>
    t.app.inject({ ...options, headers: { ...CONSOLE_HEADERS, cookie } });
  const auditReasons = async () =>
    (
      await t.app.store.audit.search({ username: OPERATOR.username, action: 'login-failed' }, { limit: 50 })
    ).map((r) => JSON.parse(r.details ?? '{}').reason as string);

  let secret = '';
  let recoveryCodes: string[] = [];

  it('sets one up: a secret for the app, proved by a code, answered by ten recovery codes', async () => {
    const cookie = await t.login(OPERATOR.username, OPERATOR.password);
    // Another session of the same user (a cookie someone else took): ended once the factor is on.
    const other = await t.login(OPERATOR.username, OPERATOR.password);
    // A session alone cannot start one: the password is asked again.
    const stolen = await as(other, {
      method: 'POST',
      url: '/api/session/totp',
      payload: { password: 'a guess' },
    });
    expect(stolen.statusCode).toBe(400);
    expect(stolen.json().errors.password).toBe('That is not your password.');
    expect((await as(other, { method: 'POST', url: '/api/session/totp', payload: {} })).statusCode).toBe(400);
    const begin = await as(cookie, {
      method: 'POST',
      url: '/api/session/totp',
      payload: { password: OPERATOR.password },
    });
    expect(begin.statusCode).toBe(200);
    ({ secret } = begin.json() as { secret: string; otpauthUrl: string });
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(begin.json().otpauthUrl).toContain(`secret=${secret}`);
    // Not on until proved: a login still needs no code.
    expect((await logIn(OPERATOR)).statusCode).toBe(200);

    const wrong = await as(cookie, { method: 'PUT', url: '/api/session/totp', payload: { code: '000000' } });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().errors.code).toMatch(/not the code the app shows/);

    expect((await as(other, { method: 'GET', url: '/api/session' })).statusCode).toBe(200);
    const on = await as(cookie, {
      method: 'PUT',
      url: '/api/session/totp',
      payload: { code: codeFor(secret) },
    });
    expect(on.statusCode).toBe(200);
    recoveryCodes = on.json().recoveryCodes;
    expect(recoveryCodes).toHaveLength(10);
    expect(new Set(recoveryCodes).size).toBe(10);
    for (const code of recoveryCodes) expect(code).toMatch(/^[a-z2-7]{5}-[a-z2-7]{5}$/);
    const session = (await as(cookie, { method: 'GET', url: '/api/session' })).json() as Session;
    expect(session.secondFactor).toEqual({ enabled: true, required: false });
    // The other session is over; this one goes on.
    expect((await as(other, { method: 'GET', url: '/api/session' })).statusCode).toBe(401);
    // A second set-up while one is on is refused.
    expect(
      (
        await as(cookie, {
          method: 'POST',
          url: '/api/session/totp',
          payload: { password: OPERATOR.password },
        })
      ).statusCode,
    ).toBe(409);
  });

  it('keeps the secret sealed and the recovery codes hashed in the database', async () => {
    const row = await t.app.store.users.findById(olga.id);
    expect(row?.totp_secret).toMatch(/^v1\./);
    expect(row?.totp_secret).not.toContain(secret);
    for (const code of recoveryCodes) expect(row?.recovery_codes).not.toContain(code.replace('-', ''));
    // Sealed for this user: copied onto another user's row, it does not open there.
    expect(() => t.app.sealer.open(row?.totp_secret ?? '', `totp:${olga.id + 1}`)).toThrow();
  });

  it('asks for the code after the password, and opens no session without it', async () => {
    const res = await logIn(OPERATOR);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ secondFactorRequired: true });
    expect(res.cookies.find((c) => c.name === 'session')).toBeUndefined();
    // A wrong password is told as before: the code is not asked for.
    const wrongPassword = await logIn({ ...OPERATOR, password: 'not the password' });
    expect(wrongPassword.json().secondFactorRequired).toBeUndefined();
  });

  it('opens a session with the current code, once: the same code again is refused', async () => {
    // The step the set-up took is used; the next one is within the window.
    const code = codeFor(secret, 1);
    const ok = await logIn({ ...OPERATOR, code });
    expect(ok.statusCode).toBe(200);
    expect((ok.json() as Session).secondFactor.enabled).toBe(true);
    const replay = await logIn({ ...OPERATOR, code });
    expect(replay.statusCode).toBe(401);
    expect(replay.json()).toMatchObject({ secondFactorRequired: true });
    expect(await auditReasons()).toContain('code already used');
  });

  it('opens a session with a recovery code, once each', async () => {
    const [first = ''] = recoveryCodes;
    const ok = await logIn({ ...OPERATOR, code: first.toUpperCase() });
    expect(ok.statusCode).toBe(200);
    const audit = await t.app.store.audit.search(
      { username: OPERATOR.username, action: 'login' },
      { limit: 1 },
    );
    expect(JSON.parse(audit[0]?.details ?? '{}')).toEqual({
      secondFactor: 'recovery code',
      recoveryCodesLeft: 9,
    });
    expect((await logIn({ ...OPERATOR, code: first })).statusCode).toBe(401);
    expect(await auditReasons()).toContain('recovery code not valid');
  });

  it('is turned off with the password, and an admin can reset it (sessions end)', async () => {
    const [, second = ''] = recoveryCodes;
    const login = await logIn({ ...OPERATOR, code: second });
    expect(login.statusCode).toBe(200);
    const cookie = `session=${login.cookies.find((c) => c.name === 'session')?.value}`;
    const wrong = await as(cookie, {
      method: 'DELETE',
      url: '/api/session/totp',
      payload: { password: 'not it at all' },
    });
    expect(wrong.statusCode).toBe(400);
    const off = await as(cookie, {
      method: 'DELETE',
      url: '/api/session/totp',
      payload: { password: OPERATOR.password },
    });
    expect(off.statusCode).toBe(204);
    expect((await logIn(OPERATOR)).statusCode).toBe(200);

    // On again, then reset by an admin: the user's sessions end, and the password alone logs in.
    const begin = (
      await as(cookie, { method: 'POST', url: '/api/session/totp', payload: { password: OPERATOR.password } })
    ).json() as {
      secret: string;
    };
    expect(
      (
        await as(cookie, {
          method: 'PUT',
          url: '/api/session/totp',
          payload: { code: codeFor(begin.secret) },
        })
      ).statusCode,
    ).toBe(200);
    const list = (await t.inject({ method: 'GET', url: '/api/users' })).json() as { items: User[] };
    expect(list.items.find((u) => u.id === olga.id)?.secondFactor).toBe(true);
    const reset = await t.inject({ method: 'DELETE', url: `/api/users/${olga.id}/totp` });
    expect(reset.statusCode).toBe(200);
    expect((reset.json() as User).secondFactor).toBe(false);
    expect((await as(cookie, { method: 'GET', url: '/api/calls' })).statusCode).toBe(401);
    expect((await logIn(OPERATOR)).statusCode).toBe(200);
    const actions = (await t.app.store.audit.search({}, { limit: 100 })).map((r) => r.action);
    expect(actions).toEqual(expect.arrayContaining(['totp-enable', 'totp-disable', 'totp-reset']));
    // An operator cannot reset anyone's.
    expect((await as(cookie, { method: 'DELETE', url: `/api/users/1/totp` })).statusCode).toBe(401);
  });
});

describe.each(DIALECTS)('wrong codes and the login limits (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestAppOn(dialect, { LOGIN_LIMIT_PER_USER: '3/15m' });
  });
  afterAll(() => t.close());

  it('counts each wrong code as a failed login; the code-less first step is not one', async () => {
    const cookie = await t.login();
    const headers = { ...CONSOLE_HEADERS, cookie };
    const { secret } = (
      await t.app.inject({
        method: 'POST',
        url: '/api/session/totp',
        headers,
        payload: { password: TEST_ADMIN.password },
      })
    ).json();
    await t.app.inject({
      method: 'PUT',
      url: '/api/session/totp',
      headers,
      payload: { code: codeFor(secret) },
    });
    const logIn = (code?: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/session',
        headers: CONSOLE_HEADERS,
        payload: { ...TEST_ADMIN, ...(code === undefined ? {} : { code }) },
      });
    // Asking for the code, many times, is no failure.
    for (let i = 0; i < 5; i++) expect((await logIn()).statusCode).toBe(401);
    for (const code of ['111111', '222222', '333333']) expect((await logIn(code)).statusCode).toBe(401);
    // Three failures: even the right code waits.
    const limited = await logIn(codeFor(secret, 1));
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    const reasons = (await t.app.store.audit.search({ action: 'login-failed' }, { limit: 10 })).map(
      (r) => JSON.parse(r.details ?? '{}').reason,
    );
    expect(reasons).toEqual(['too many failed logins', 'wrong code', 'wrong code', 'wrong code']);
  });
});

describe.each(DIALECTS)('REQUIRE_TOTP=admins (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestAppOn(dialect, { REQUIRE_TOTP: 'admins' });
  });
  afterAll(() => t.close());

  it('lets an admin without one do nothing but set one up; then everything', async () => {
    const cookie = await t.login();
    const get = (url: string) =>
      t.app.inject({ method: 'GET', url, headers: { ...CONSOLE_HEADERS, cookie } });
    const session = (await get('/api/session')).json() as Session;
    expect(session.secondFactor).toEqual({ enabled: false, required: true });
    const refused = await get('/api/calls');
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ secondFactorSetupRequired: true });
    expect((await get('/api/users')).statusCode).toBe(403);

    const begin = await t.app.inject({
      method: 'POST',
      url: '/api/session/totp',
      headers: { ...CONSOLE_HEADERS, cookie },
      payload: { password: TEST_ADMIN.password },
    });
    expect(begin.statusCode).toBe(200);
    const on = await t.app.inject({
      method: 'PUT',
      url: '/api/session/totp',
      headers: { ...CONSOLE_HEADERS, cookie },
      payload: { code: codeFor(begin.json().secret) },
    });
    expect(on.statusCode).toBe(200);
    expect((await get('/api/calls')).statusCode).toBe(200);
    const otto = await t.app.inject({
      method: 'POST',
      url: '/api/users',
      headers: { ...CONSOLE_HEADERS, cookie },
      payload: { username: 'otto', password: 'operator password 2', displayName: 'Otto', role: 'operator' },
    });
    expect(otto.statusCode).toBe(201);
  });

  it('asks nothing of an operator', async () => {
    const cookie = await t.login('otto', 'operator password 2');
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/calls',
      headers: { ...CONSOLE_HEADERS, cookie },
    });
    expect(res.statusCode).toBe(200);
  });

  it('holds whatever the URL looks like: the rule is the route’s', async () => {
    await t.app.store.users.clearTotp(1);
    const cookie = await t.login(TEST_ADMIN.username, TEST_ADMIN.password);
    const res = await t.app.inject({
      method: 'GET',
      url: '/%61pi/calls',
      headers: { ...CONSOLE_HEADERS, cookie },
    });
    expect(res.statusCode).toBe(403);
  });
});
