import { randomBytes } from 'node:crypto';
import type { AUDIT_ACTIONS, Session } from '@school/contract';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { claimValues, roleOf, safeNext, schoolsOf, usernameOf } from '../src/auth/oidc.js';
import { sha256 } from '../src/auth/sessions.js';
import { loadConfig } from '../src/config.js';
import { CONSOLE_HEADERS, TEST_ADMIN, type TestApp } from './helpers.js';
import {
  signInThroughBrowser,
  startIdentityProvider,
  type TestIdentityProvider,
} from './identity-provider.js';
import { DIALECTS, startTestAppOn } from './pg.js';
import { freePort } from './server-process.js';

// Single sign-on against a real OpenID Connect provider (oidc-provider on a loopback port), the
// whole redirect flow followed as a browser would, on each database.

const ACCOUNTS = {
  ada: {
    name: 'Ada Admin',
    email: 'ada@school.example',
    preferred_username: 'ada',
    groups: ['staff', 'it-admins'],
  },
  otto: { name: 'Otto Operator', email: 'otto@school.example', groups: ['office'] },
  pupil: { name: 'Pat Pupil', preferred_username: 'pat', groups: ['pupils'] },
};

interface Setup {
  readonly t: TestApp;
  readonly idp: TestIdentityProvider;
  readonly base: string;
  signIn(login: string, next?: string): ReturnType<typeof signInThroughBrowser>;
  /** GET /api/session with the cookie a sign-in set. */
  session(cookies: Map<string, string>): Promise<Response>;
  close(): Promise<void>;
}

async function setUp(
  dialect: (typeof DIALECTS)[number],
  options: { claimsInIdToken?: boolean; env?: Record<string, string> } = {},
): Promise<Setup> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const idp = await startIdentityProvider({
    redirectUri: `${base}/api/session/oidc/callback`,
    accounts: ACCOUNTS,
    claimsInIdToken: options.claimsInIdToken ?? true,
  });
  const t = await startTestAppOn(dialect, {
    PUBLIC_BASE_URL: base,
    OIDC_ISSUER: idp.issuer,
    OIDC_CLIENT_ID: idp.clientId,
    OIDC_CLIENT_SECRET: idp.clientSecret,
    OIDC_LABEL: 'Test School',
    OIDC_SCOPES: 'groups',
    OIDC_ADMIN_GROUPS: 'IT-Admins',
    OIDC_OPERATOR_GROUPS: 'office,staff',
    ...options.env,
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  return {
    t,
    idp,
    base,
    signIn: (login, next) =>
      signInThroughBrowser(
        `${base}/api/session/oidc/start${next ? `?next=${encodeURIComponent(next)}` : ''}`,
        login,
      ),
    session: (cookies) =>
      fetch(`${base}/api/session`, {
        headers: { cookie: `session=${cookies.get('session') ?? ''}` },
      }),
    async close() {
      await t.close();
      await idp.close();
    },
  };
}

describe.each(DIALECTS)('single sign-on with OpenID Connect (%s)', (dialect) => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp(dialect);
  });
  afterAll(() => s.close());

  const auditOf = async (action: (typeof AUDIT_ACTIONS)[number]) =>
    (await s.t.app.store.audit.search({ action }, { limit: 50 })).map((r) => ({
      username: r.username,
      details: r.details ? JSON.parse(r.details) : null,
    }));

  it('offers the button on the login page, with the password form', async () => {
    const res = await fetch(`${s.base}/api/session/login-options`);
    expect(await res.json()).toEqual({ localLogin: true, sso: { label: 'Test School' } });
  });

  it('logs a member of an admin group in as an admin, made at the first login, back where they were going', async () => {
    const end = await s.signIn('ada', '/calls?outcome=fault');
    expect(end.location).toBe('/calls?outcome=fault');
    const res = await s.session(end.serverCookies);
    expect(res.status).toBe(200);
    const session = (await res.json()) as Session;
    expect(session.user).toMatchObject({ username: 'ada', displayName: 'Ada Admin', role: 'admin' });
    expect(session.method).toBe('sso');
    // An admin: the Users page's API answers.
    const users = await fetch(`${s.base}/api/users`, {
      headers: { cookie: `session=${end.serverCookies.get('session')}` },
    });
    expect(users.status).toBe(200);
    const ada = ((await users.json()) as { items: { username: string; sso: boolean }[] }).items.find(
      (u) => u.username === 'ada',
    );
    expect(ada?.sso).toBe(true);
    // The flow's cookie is gone once used.
    expect(end.serverCookies.has('oidc-flow')).toBe(false);
    expect(await auditOf('sso-login')).toContainEqual({
      username: 'ada',
      details: { role: 'admin', created: true },
    });
  });

  it('logs a member of an operator group in as an operator (username from the email when no preferred_username)', async () => {
    const end = await s.signIn('otto');
    expect(end.location).toBe('/');
    const session = (await (await s.session(end.serverCookies)).json()) as Session;
    expect(session.user).toMatchObject({ username: 'otto@school.example', role: 'operator' });
    const users = await fetch(`${s.base}/api/users`, {
      headers: { cookie: `session=${end.serverCookies.get('session')}` },
    });
    expect(users.status).toBe(403);
  });

  it('refuses an account in none of the groups: no session, the login page says why, audited', async () => {
    const end = await s.signIn('pupil', '/send');
    expect(end.location).toBe('/login?sso=refused&next=%2Fsend');
    expect(end.serverCookies.has('session')).toBe(false);
    expect(await s.t.app.store.users.findByUsername('pat')).toBeUndefined();
    const refused = await auditOf('sso-refused');
    expect(refused[0]).toMatchObject({ username: 'pat', details: { claimValues: ['pupils'] } });
  });

  it('folds a stranger’s refused callbacks into one audit row per address, with their count', async () => {
    const before = (await auditOf('sso-refused')).length;
    for (let i = 0; i < 300; i++) {
      const res = await s.t.app.inject({
        method: 'GET',
        url: `/api/session/oidc/callback?code=x&state=y${i}`,
      });
      expect(res.statusCode).toBe(303);
    }
    // The first refusal is written at once; the 299 after it, as one row at their window's end
    // (test/audit-fold.test.ts).
    expect((await auditOf('sso-refused')).length).toBe(before + 1);
  });

  it('sets the role again at every login, and audits the change', async () => {
    s.idp.accounts.set('ada', { ...ACCOUNTS.ada, name: 'Ada Lovelace', groups: ['staff'] });
    try {
      const end = await s.signIn('ada');
      const session = (await (await s.session(end.serverCookies)).json()) as Session;
      expect(session.user).toMatchObject({ username: 'ada', displayName: 'Ada Lovelace', role: 'operator' });
      expect(await auditOf('user-update')).toContainEqual({
        username: 'ada',
        details: {
          role: { from: 'admin', to: 'operator' },
          displayName: { from: 'Ada Admin', to: 'Ada Lovelace' },
          by: 'single sign-on',
        },
      });
    } finally {
      s.idp.accounts.set('ada', ACCOUNTS.ada);
    }
    // Out of every group now: refused, though the user exists.
    s.idp.accounts.set('ada', { ...ACCOUNTS.ada, groups: [] });
    try {
      expect((await s.signIn('ada')).location).toBe('/login?sso=refused');
    } finally {
      s.idp.accounts.set('ada', ACCOUNTS.ada);
    }
  });

  it('keeps a disabled user out, and has no password to log in with', async () => {
    const otto = await s.t.app.store.users.findByUsername('otto@school.example');
    expect(otto).toBeDefined();
    const patch = await s.t.inject({
      method: 'PATCH',
      url: `/api/users/${otto?.id}`,
      payload: { disabled: true },
    });
    expect(patch.statusCode).toBe(200);
    expect((await s.signIn('otto')).location).toBe('/login?sso=disabled');
    await s.t.inject({ method: 'PATCH', url: `/api/users/${otto?.id}`, payload: { disabled: false } });
    // No password is set for a single sign-on user, and none can be.
    const setPassword = await s.t.inject({
      method: 'PATCH',
      url: `/api/users/${otto?.id}`,
      payload: { password: 'a new password here' },
    });
    expect(setPassword.statusCode).toBe(409);
  });

  it('refuses an account whose username a local user holds', async () => {
    const created = await s.t.inject({
      method: 'POST',
      url: '/api/users',
      payload: {
        username: 'erin',
        displayName: 'Local Erin',
        password: 'erin local password',
        role: 'operator',
      },
    });
    expect(created.statusCode).toBe(201);
    s.idp.accounts.set('erin', { name: 'Erin Entra', preferred_username: 'erin', groups: ['it-admins'] });
    const end = await s.signIn('erin');
    expect(end.location).toBe('/login?sso=conflict');
    expect((await s.t.app.store.users.findByUsername('erin'))?.role).toBe('operator');
  });

  it('fails a callback without its flow cookie, or with another flow’s state', async () => {
    // The provider's answer arrives in a browser that did not start the flow.
    const start = await fetch(`${s.base}/api/session/oidc/start`, { redirect: 'manual' });
    const authorize = new URL(start.headers.get('location') ?? '');
    const forged = await fetch(
      `${s.base}/api/session/oidc/callback?code=made-up&state=${authorize.searchParams.get('state')}`,
      { redirect: 'manual' },
    );
    expect(forged.status).toBe(303);
    expect(forged.headers.get('location')).toBe('/login?sso=failed');
    // A flow cookie of one start, with the state of another.
    const flowCookie = start.headers
      .getSetCookie()
      .find((c) => c.startsWith('oidc-flow='))
      ?.split(';')[0];
    const other = await fetch(`${s.base}/api/session/oidc/start`, { redirect: 'manual' });
    const otherState = new URL(other.headers.get('location') ?? '').searchParams.get('state');
    const mixed = await fetch(`${s.base}/api/session/oidc/callback?code=x&state=${otherState}`, {
      redirect: 'manual',
      headers: { cookie: flowCookie ?? '' },
    });
    expect(mixed.headers.get('location')).toBe('/login?sso=failed');
    expect(mixed.headers.getSetCookie().join()).not.toMatch(/(^|, )session=[^;]/);
  });

  it('asks for the code with PKCE, state and nonce, and the flow cookie is sealed, Lax and HttpOnly', async () => {
    const start = await fetch(`${s.base}/api/session/oidc/start?next=/send`, { redirect: 'manual' });
    const authorize = new URL(start.headers.get('location') ?? '');
    expect(authorize.origin).toBe(s.idp.issuer);
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      client_id: s.idp.clientId,
      redirect_uri: `${s.base}/api/session/oidc/callback`,
      response_type: 'code',
      code_challenge_method: 'S256',
      scope: 'openid profile email groups',
    });
    for (const p of ['code_challenge', 'state', 'nonce'])
      expect(authorize.searchParams.get(p)).toMatch(/^.{20,}$/);
    const cookie = start.headers.getSetCookie().find((c) => c.startsWith('oidc-flow=')) ?? '';
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    // Nothing of the flow can be read from the cookie.
    expect(cookie).not.toContain(authorize.searchParams.get('state'));
    expect(cookie).not.toContain('/send');
  });

  it('sends an unsafe next to the home page, not off the site', async () => {
    const end = await s.signIn('ada', '//evil.example/x');
    expect(end.location).toBe('/');
  });
});

describe.each(DIALECTS)('single sign-on, groups only in UserInfo; password logins off (%s)', (dialect) => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp(dialect, { claimsInIdToken: false, env: { LOCAL_LOGIN: 'off' } });
  });
  afterAll(() => s.close());

  it('reads the roles claim from UserInfo when the ID token does not carry it', async () => {
    const end = await s.signIn('ada');
    expect(end.location).toBe('/');
    const session = (await (await s.session(end.serverCookies)).json()) as Session;
    expect(session.user).toMatchObject({ username: 'ada', displayName: 'Ada Admin', role: 'admin' });
  });

  it('hides the password form and refuses password logins', async () => {
    expect(await (await fetch(`${s.base}/api/session/login-options`)).json()).toEqual({
      localLogin: false,
      sso: { label: 'Test School' },
    });
    const res = await s.t.app.inject({
      method: 'POST',
      url: '/api/session',
      headers: { ...CONSOLE_HEADERS, origin: s.base },
      payload: { username: TEST_ADMIN.username, password: TEST_ADMIN.password },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().detail).toBe('Password logins are turned off here: log in with Test School.');
  });

  it('ends a password session opened before password logins were turned off, at its next use', async () => {
    // A password session of ada's from before LOCAL_LOGIN=off, as the store kept it.
    const end = await s.signIn('ada');
    const admin = await s.t.app.store.users.findByUsername('ada');
    if (!admin) throw new Error('no user ada');
    const token = randomBytes(32).toString('base64url');
    const now = Date.now();
    await s.t.app.store.sessions.create({
      id: sha256(token),
      user_id: admin.id,
      created_at: now,
      last_seen_at: now,
      expires_at: now + 3_600_000,
      ip: '127.0.0.1',
      user_agent: null,
      method: 'password',
    });
    const headers = { ...CONSOLE_HEADERS, origin: s.base, cookie: `session=${token}` };
    const session = await s.t.app.inject({ method: 'GET', url: '/api/session', headers });
    expect(session.statusCode).toBe(401);
    const change = await s.t.app.inject({
      method: 'PUT',
      url: '/api/session/password',
      headers,
      payload: { currentPassword: TEST_ADMIN.password, newPassword: 'a brand new password 1' },
    });
    expect(change.statusCode).toBe(401);
    expect(await s.t.app.store.sessions.find(sha256(token))).toBeUndefined();
    // Single sign-on sessions work on.
    expect((await s.session(end.serverCookies)).status).toBe(200);
  });
});

describe('single sign-on: provider out of reach, and settings', () => {
  let s: Setup;
  afterEach(async () => {
    await s?.close();
  });

  it('sends the user back to the login page when the provider cannot be reached, and recovers', async () => {
    s = await setUp('sqlite');
    const port = Number(new URL(s.idp.issuer).port);
    await s.idp.close();
    const start = await fetch(`${s.base}/api/session/oidc/start`, { redirect: 'manual' });
    expect(start.status).toBe(303);
    expect(start.headers.get('location')).toBe('/login?sso=unavailable');
    // Back (with new keys): the next login finds it.
    const again = await startIdentityProvider({
      redirectUri: `${s.base}/api/session/oidc/callback`,
      accounts: ACCOUNTS,
      port,
    });
    try {
      expect((await s.signIn('otto')).location).toBe('/');
    } finally {
      await again.close();
    }
  });

  it('refuses incomplete or unsafe settings at start, naming the variable', () => {
    const base = { DATA_DIR: '/tmp/x', OIDC_ISSUER: 'https://login.example.org/realms/school' };
    expect(() => loadConfig(base)).toThrow(/OIDC_CLIENT_ID: is required with OIDC_ISSUER/);
    expect(() => loadConfig(base)).toThrow(/PUBLIC_BASE_URL: is required with OIDC_ISSUER/);
    expect(() => loadConfig(base)).toThrow(/OIDC_OPERATOR_GROUPS: or OIDC_ADMIN_GROUPS is required/);
    const complete = {
      ...base,
      OIDC_CLIENT_ID: 'console',
      OIDC_CLIENT_SECRET: 'secret',
      PUBLIC_BASE_URL: 'https://sms.example.org',
      OIDC_OPERATOR_GROUPS: 'staff',
    };
    expect(loadConfig(complete).OIDC_ISSUER).toBe(base.OIDC_ISSUER);
    expect(() => loadConfig({ ...complete, OIDC_ISSUER: 'http://login.example.org' })).toThrow(
      /OIDC_ISSUER: must be https/,
    );
    expect(loadConfig({ ...complete, OIDC_ISSUER: 'http://127.0.0.1:8080' }).OIDC_ISSUER).toBe(
      'http://127.0.0.1:8080',
    );
    expect(() => loadConfig({ DATA_DIR: '/tmp/x', LOCAL_LOGIN: 'off' })).toThrow(
      /LOCAL_LOGIN: off needs single sign-on/,
    );
  });
});

describe('single sign-on: claims', () => {
  it('reads the roles claim by name or dotted path, as a list or one value', () => {
    expect(claimValues({ groups: ['a', 'b', 3] }, 'groups')).toEqual(['a', 'b']);
    expect(claimValues({ realm_access: { roles: ['console-admin'] } }, 'realm_access.roles')).toEqual([
      'console-admin',
    ]);
    expect(claimValues({ hd: 'school.example' }, 'hd')).toEqual(['school.example']);
    expect(claimValues({}, 'groups')).toBeUndefined();
    expect(claimValues({ groups: {} }, 'groups.toString')).toBeUndefined();
  });

  it('makes admins of admin groups first, operators of operator groups, nobody of the rest', () => {
    const groups = { adminGroups: ['IT'], operatorGroups: ['office'] };
    expect(roleOf(['office', 'it'], groups)).toBe('admin');
    expect(roleOf(['Office'], groups)).toBe('operator');
    expect(roleOf(['pupils'], groups)).toBeNull();
    expect(roleOf([], groups)).toBeNull();
  });

  it('names users from preferred_username, else email, else the subject', () => {
    expect(usernameOf({ sub: '1', preferred_username: 'Ada.L@School.example' })).toBe('ada.l@school.example');
    expect(usernameOf({ sub: '1', email: 'o@x.org' })).toBe('o@x.org');
    expect(usernameOf({ sub: '1', preferred_username: 'Zoë Brown' })).toBe('zo.brown');
    // Lookalikes: an invisible character or a combining mark makes the name unusable (the email,
    // else the subject's hash, is taken instead); compatibility forms are folded.
    expect(usernameOf({ sub: '1', preferred_username: 'admin\u200b', email: 'ann@x.org' })).toBe('ann@x.org');
    expect(usernameOf({ sub: 'abc', preferred_username: 'adminİ' })).toMatch(/^sso-[0-9a-f]{12}$/);
    expect(usernameOf({ sub: 'abc', preferred_username: 'ad\u00admin' })).toMatch(/^sso-[0-9a-f]{12}$/);
    expect(usernameOf({ sub: '1', preferred_username: 'ａｄａ' })).toBe('ada');
    expect(usernameOf({ sub: 'abc' })).toMatch(/^sso-[0-9a-f]{12}$/);
  });

  it('takes only a path on this site as where to go next', () => {
    expect(safeNext('/calls?x=1')).toBe('/calls?x=1');
    for (const bad of [
      '//evil.example',
      '/\\evil.example',
      'https://evil.example',
      'calls',
      '/a\nb',
      undefined,
    ]) {
      expect(safeNext(bad)).toBe('/');
    }
  });
});

describe.each(DIALECTS)('single sign-on: schools from a claim (%s)', (dialect) => {
  // OIDC_SCHOOLS_CLAIM=groups: the school's IT puts staff in a group named by their school's topic
  // key beside the staff group; `all-schools` (OIDC_ALL_SCHOOLS_GROUPS) is every school.
  let s: Setup;
  let north: number;
  let south: number;
  beforeAll(async () => {
    s = await setUp(dialect, {
      env: { OIDC_SCHOOLS_CLAIM: 'groups', OIDC_ALL_SCHOOLS_GROUPS: 'All-Schools' },
    });
    const made = async (name: string, topic: string) =>
      (
        await s.t.app.store.schools.create({
          name,
          base_url: `https://${topic}.example.org`,
          topic_key: topic,
          allowed_ips: null,
        })
      ).id;
    north = await made('North School', 'north');
    south = await made('South School', 'south');
  });
  afterAll(() => s.close());

  const account = (login: string, groups: string[]) =>
    s.idp.accounts.set(login, { name: login.toUpperCase(), preferred_username: login, groups });
  const sessionOf = async (end: Awaited<ReturnType<Setup['signIn']>>) =>
    (await (await s.session(end.serverCookies)).json()) as Session;
  const lastAudit = async (action: (typeof AUDIT_ACTIONS)[number]) => {
    const [row] = await s.t.app.store.audit.search({ action }, { limit: 1 });
    return row?.details ? JSON.parse(row.details) : null;
  };

  it('limits a user to the schools whose topic keys the claim holds, at their first sign-in', async () => {
    account('nina', ['office', 'north']);
    const end = await s.signIn('nina');
    expect(end.location).toBe('/');
    expect((await sessionOf(end)).user).toMatchObject({
      username: 'nina',
      role: 'operator',
      schoolIds: [north],
    });
    expect(await lastAudit('user-create')).toMatchObject({ schoolIds: [north], by: 'single sign-on' });
    expect(await lastAudit('sso-login')).toMatchObject({ schoolIds: [north] });
  });

  it('sets them again at each sign-in, the change audited', async () => {
    account('nina', ['office', 'south', 'north', 'unknown-key']);
    const end = await s.signIn('nina');
    expect((await sessionOf(end)).user.schoolIds).toEqual([north, south].sort((a, b) => a - b));
    expect(await lastAudit('user-update')).toMatchObject({
      schoolIds: { from: [north], to: [north, south].sort((a, b) => a - b) },
      by: 'single sign-on',
    });
  });

  it('makes organisation-wide only a member of OIDC_ALL_SCHOOLS_GROUPS', async () => {
    account('iris', ['it-admins', 'all-schools']);
    const end = await s.signIn('iris');
    expect((await sessionOf(end)).user).toMatchObject({ role: 'admin', schoolIds: null });
  });

  it('refuses a sign-in whose claim names no school: never every school by mistake', async () => {
    for (const groups of [['office'], ['office', 'North'], ['office', 'west']]) {
      account('lost', groups);
      const end = await s.signIn('lost', '/send');
      expect(end.location, groups.join()).toBe('/login?sso=no-school&next=%2Fsend');
      expect(end.serverCookies.has('session')).toBe(false);
    }
    expect(await s.t.app.store.users.findByUsername('lost')).toBeUndefined();
    expect(await lastAudit('sso-refused')).toMatchObject({
      reason: expect.stringContaining('names no school'),
      schoolValues: ['office', 'west'],
    });
    // A user who had schools and lost them is refused too, and kept as they were.
    account('nina', ['office']);
    expect((await s.signIn('nina')).location).toBe('/login?sso=no-school');
    expect((await s.t.app.store.users.findByUsername('nina'))?.school_ids).toBe(
      JSON.stringify([north, south].sort((a, b) => a - b)),
    );
  });
});

describe('single sign-on without OIDC_SCHOOLS_CLAIM', () => {
  it('leaves a user’s schools to the Users page, kept across sign-ins', async () => {
    const s = await setUp('sqlite');
    try {
      const school = await s.t.app.store.schools.create({
        name: 'North School',
        base_url: 'https://north.example.org',
        topic_key: 'north',
        allowed_ips: null,
      });
      const first = await s.signIn('otto');
      expect(((await (await s.session(first.serverCookies)).json()) as Session).user.schoolIds).toBeNull();
      const user = await s.t.app.store.users.findByUsername('otto@school.example');
      const limited = await s.t.inject({
        method: 'PATCH',
        url: `/api/users/${user?.id}`,
        payload: { schoolIds: [school.id] },
      });
      expect(limited.statusCode).toBe(200);
      const again = await s.signIn('otto');
      expect(((await (await s.session(again.serverCookies)).json()) as Session).user.schoolIds).toEqual([
        school.id,
      ]);
    } finally {
      await s.close();
    }
  });

  it('refuses OIDC_ALL_SCHOOLS_GROUPS without it at start', () => {
    const settings = {
      DATA_DIR: '/tmp/x',
      OIDC_ISSUER: 'https://login.example.org/realms/school',
      OIDC_CLIENT_ID: 'console',
      OIDC_CLIENT_SECRET: 'secret',
      PUBLIC_BASE_URL: 'https://sms.example.org',
      OIDC_OPERATOR_GROUPS: 'staff',
      OIDC_ALL_SCHOOLS_GROUPS: 'all-schools',
    };
    expect(() => loadConfig(settings)).toThrow(/OIDC_ALL_SCHOOLS_GROUPS: needs OIDC_SCHOOLS_CLAIM/);
    expect(loadConfig({ ...settings, OIDC_SCHOOLS_CLAIM: 'groups' }).OIDC_SCHOOLS_CLAIM).toBe('groups');
    expect(() => loadConfig({ ...settings, OIDC_SCHOOLS_CLAIM: 'bad claim' })).toThrow(/OIDC_SCHOOLS_CLAIM/);
  });
});

describe('single sign-on: the schools a claim gives', () => {
  const schools = [
    { id: 1, topic_key: 'north' },
    { id: 2, topic_key: 'South' },
  ];
  it('maps topic keys exactly, every school only by an OIDC_ALL_SCHOOLS_GROUPS value, nothing else', () => {
    expect(schoolsOf(['north', 'South'], [], schools)).toEqual([1, 2]);
    expect(schoolsOf(['south', 'NORTH'], [], schools)).toBe('none');
    expect(schoolsOf([], ['all'], schools)).toBe('none');
    expect(schoolsOf(['ALL', 'north'], ['all'], schools)).toBe('every');
    expect(schoolsOf([' north '], [], schools)).toEqual([1]);
  });
});
