/**
 * Staff limited to schools, the user side (docs/security.md#who-sees-what): `schoolIds` on the
 * users' API, read fresh with every request; an admin limited to schools acts as an operator for
 * them and is refused everything organisation-wide; the audit of one's own actions; Send from the
 * console, where staff are not callers (a school's allowedIps do not apply) and a limited user
 * sends only for their schools. Who sees which calls is call-schools.test.ts's.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AuditEntry, Session, User } from '@school/contract';
import type { InjectOptions, RouteOptions } from 'fastify';
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../src/auth/password.js';
import { SCOPE_REFUSED } from '../src/auth/plugin.js';
import { SESSION_RECHECK_MS } from '../src/auth/session-watch.js';
import { OUTBOX_TABLES } from '../src/outbox/index.js';
import type { Database } from '../src/store/index.js';
import { migrationProvider } from '../src/store/migrations.js';
import { CONSOLE_HEADERS, registerSchool, startTestApp, type TestApp } from './helpers.js';
import { DIALECTS, freshPostgres, startTestAppOn, TEST_DATABASE_URL } from './pg.js';

const PASSWORD = 'a long enough password';

/** A request as the console sends it, with a session cookie. */
const as = (t: TestApp, cookie: string, options: InjectOptions) =>
  t.app.inject({ ...options, headers: { ...CONSOLE_HEADERS, cookie, ...(options.headers as object) } });

async function addUser(
  t: TestApp,
  username: string,
  role: 'admin' | 'operator',
  schoolIds?: number[] | null,
): Promise<{ user: User; cookie: string }> {
  const res = await t.inject({
    method: 'POST',
    url: '/api/users',
    payload: {
      username,
      displayName: username.toUpperCase(),
      password: PASSWORD,
      role,
      ...(schoolIds !== undefined ? { schoolIds } : {}),
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  return { user: res.json() as User, cookie: await t.login(username, PASSWORD) };
}

async function twoSchools(t: TestApp) {
  const north = await registerSchool(t.app, {
    name: 'North School',
    baseUrl: 'https://north.example.org',
    topicKey: 'north',
  });
  const south = await registerSchool(t.app, {
    name: 'South School',
    baseUrl: 'https://south.example.org',
    topicKey: 'south',
    // Only the school's own servers may call for it: never the console's staff's addresses.
    allowedIps: '198.51.100.0/24',
  });
  return { north, south };
}

describe.each(DIALECTS)('users limited to schools (%s)', (dialect) => {
  let t: TestApp;
  let north: number;
  let south: number;
  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    const schools = await twoSchools(t);
    north = schools.north.id;
    south = schools.south.id;
  });
  afterAll(() => t.close());

  it('takes schoolIds when a user is made, shows them in the list and the session, and audits them', async () => {
    const { user, cookie } = await addUser(t, 'nora', 'operator', [south, north, north]);
    expect(user.schoolIds).toEqual([north, south].sort((a, b) => a - b));
    const listed = (await t.inject({ method: 'GET', url: '/api/users' })).json().items as User[];
    expect(listed.find((u) => u.username === 'nora')?.schoolIds).toEqual(user.schoolIds);
    expect(listed.find((u) => u.username === 'admin')?.schoolIds).toBeNull();
    const session = (await as(t, cookie, { method: 'GET', url: '/api/session' })).json() as Session;
    expect(session.user.schoolIds).toEqual(user.schoolIds);
    const [entry] = await t.app.store.audit.search({ action: 'user-create' }, { limit: 1 });
    expect(JSON.parse(entry?.details ?? '{}')).toMatchObject({ schoolIds: user.schoolIds });
  });

  it('makes a user organisation-wide when schoolIds is absent, empty or null', async () => {
    for (const [name, schoolIds] of [
      ['absent', undefined],
      ['empty', []],
      ['nulled', null],
    ] as const) {
      const { user } = await addUser(
        t,
        `every.${name}`,
        'operator',
        schoolIds as number[] | null | undefined,
      );
      expect(user.schoolIds, name).toBeNull();
    }
  });

  it('refuses school ids no school has, naming them, and changes nothing', async () => {
    const made = await t.inject({
      method: 'POST',
      url: '/api/users',
      payload: {
        username: 'ghost',
        displayName: 'Ghost',
        password: PASSWORD,
        role: 'operator',
        schoolIds: [north, 9001, 9002],
      },
    });
    expect(made.statusCode).toBe(400);
    expect(made.headers['content-type']).toContain('application/problem+json');
    expect(made.json().detail).toBe('There are no schools with the ids 9001, 9002.');
    expect(made.json().errors.schoolIds).toBe(made.json().detail);
    expect(await t.app.store.users.findByUsername('ghost')).toBeUndefined();

    const { user } = await addUser(t, 'kept', 'operator', [north]);
    const changed = await t.inject({
      method: 'PATCH',
      url: `/api/users/${user.id}`,
      payload: { schoolIds: [9003] },
    });
    expect(changed.statusCode).toBe(400);
    expect(changed.json().detail).toBe('There is no school with the id 9003.');
    const after = (await t.inject({ method: 'GET', url: '/api/users' })).json().items as User[];
    expect(after.find((u) => u.id === user.id)?.schoolIds).toEqual([north]);
    // Not a number at all: the schema's 400.
    const wrong = await t.inject({
      method: 'PATCH',
      url: `/api/users/${user.id}`,
      payload: { schoolIds: ['north'] },
    });
    expect(wrong.statusCode).toBe(400);
  });

  it('changes a user’s schools, audited from and to, holding from their next request without a new login', async () => {
    const { user, cookie } = await addUser(t, 'moved', 'operator', [north]);
    const seen = async () =>
      (
        (await as(t, cookie, { method: 'GET', url: '/api/operations/schools' })).json().items as {
          id: number;
        }[]
      ).map((s) => s.id);
    expect(await seen()).toEqual([north]);
    const res = await t.inject({
      method: 'PATCH',
      url: `/api/users/${user.id}`,
      payload: { schoolIds: [south] },
    });
    expect(res.statusCode).toBe(200);
    expect((res.json() as User).schoolIds).toEqual([south]);
    expect(await seen()).toEqual([south]);
    const everywhere = await t.inject({
      method: 'PATCH',
      url: `/api/users/${user.id}`,
      payload: { schoolIds: [] },
    });
    expect((everywhere.json() as User).schoolIds).toBeNull();
    expect(await seen()).toEqual([north, south].sort((a, b) => a - b));
    const entries = await t.app.store.audit.search({ action: 'user-update' }, { limit: 2 });
    expect(entries.map((e) => JSON.parse(e.details ?? '{}').schoolIds)).toEqual([
      { from: [south], to: null },
      { from: [north], to: [south] },
    ]);
  });

  it('never leaves no admin of every school: the last one cannot be limited to schools', async () => {
    const admin = (await t.app.store.users.findByUsername('admin'))?.id as number;
    const limited = await addUser(t, 'limited.admin', 'admin', [north]);
    // A limited admin does not count: the first is still the last admin of every school.
    const refused = await t.inject({
      method: 'PATCH',
      url: `/api/users/${admin}`,
      payload: { schoolIds: [north] },
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().detail).toMatch(/last enabled admin of every school/);
    expect((await t.app.store.users.findById(admin))?.school_ids).toBeNull();
    // Once the other admin is made organisation-wide, the first may be limited, and back.
    await t.inject({ method: 'PATCH', url: `/api/users/${limited.user.id}`, payload: { schoolIds: null } });
    const other = await t.login('limited.admin', PASSWORD);
    const allowed = await as(t, other, {
      method: 'PATCH',
      url: `/api/users/${admin}`,
      payload: { schoolIds: [north] },
    });
    expect(allowed.statusCode).toBe(200);
    const back = await as(t, other, {
      method: 'PATCH',
      url: `/api/users/${admin}`,
      payload: { schoolIds: null },
    });
    expect((back.json() as User).schoolIds).toBeNull();
  });
});

describe.skipIf(!TEST_DATABASE_URL)('the schools column added to an existing database (postgres)', () => {
  it('leaves every existing user organisation-wide', async () => {
    const fresh = await freshPostgres();
    const raw = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: fresh.url, max: 1 }) }),
    });
    let t: TestApp | undefined;
    try {
      const before = await new Migrator({
        db: raw,
        provider: migrationProvider('postgres', [OUTBOX_TABLES]),
      }).migrateTo('0023_dead_sealed_deliveries');
      expect(before.error).toBeUndefined();
      // A user as the release before the column made them.
      const now = Date.now();
      await raw
        .insertInto('users')
        .values({
          username: 'veteran',
          display_name: 'Veteran',
          role: 'operator',
          password_hash: await hashPassword(PASSWORD),
          disabled: 0,
          created_at: now,
          updated_at: now,
        } as never)
        .execute();
      await raw.destroy();
      t = await startTestApp({ DATABASE_URL: fresh.url });
      expect((await t.app.store.users.findByUsername('veteran'))?.school_ids).toBeNull();
      const cookie = await t.login('veteran', PASSWORD);
      const session = (await as(t, cookie, { method: 'GET', url: '/api/session' })).json() as Session;
      expect(session.user.schoolIds).toBeNull();
      // A user existed: no first admin was made.
      expect((await t.app.store.users.list()).map((u) => [u.username, u.school_ids])).toEqual([
        ['veteran', null],
      ]);
    } finally {
      await t?.close();
      await fresh.drop();
    }
  }, 30_000);
});

describe('what an admin limited to schools may reach', () => {
  let t: TestApp;
  let scopedAdmin: string;
  let operator: string;
  beforeAll(async () => {
    t = await startTestApp();
    const { north } = await twoSchools(t);
    scopedAdmin = (await addUser(t, 'north.admin', 'admin', [north.id])).cookie;
    operator = (await addUser(t, 'north.office', 'operator', [north.id])).cookie;
  });
  afterAll(() => t.close());

  const methodsOf = (route: RouteOptions) => (Array.isArray(route.method) ? route.method : [route.method]);
  const concrete = (url: string) =>
    url
      .replace(':name', 'pushNoti')
      .replace(/:[A-Za-z]+/g, '1')
      .replace('*', 'x');

  it('is refused every admin route (schools, templates, books, users, privacy) with 403, as an operator is not', async () => {
    const failures: string[] = [];
    const adminRoutes = t.app.routeTable.filter((r) => r.config?.access === 'admin');
    expect(adminRoutes.map((r) => r.url)).toEqual(
      expect.arrayContaining(['/api/schools', '/api/templates', '/api/books', '/api/users']),
    );
    for (const route of adminRoutes) {
      for (const method of methodsOf(route)) {
        if (method === 'HEAD') continue;
        const payload = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method) ? {} : undefined;
        const res = await as(t, scopedAdmin, {
          method: method as InjectOptions['method'],
          url: concrete(route.url),
          ...(payload ? { payload } : {}),
        });
        if (res.statusCode !== 403 || res.json().detail !== SCOPE_REFUSED)
          failures.push(`${method} ${route.url} → ${res.statusCode}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('reaches what an operator reaches', async () => {
    for (const url of [
      '/api/calls',
      '/api/deliveries',
      '/api/stats',
      '/api/operations/schools',
      '/api/audit',
    ]) {
      const res = await as(t, scopedAdmin, { method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
    }
  });

  it('sees the audit of their own actions only, as any user but an admin of every school', async () => {
    // Each acts once: a send.
    for (const cookie of [scopedAdmin, operator]) {
      const sent = await as(t, cookie, {
        method: 'POST',
        url: '/api/operations/SendNotificationType',
        payload: { id: '1', baseUrlSchool: 'https://north.example.org/', TypeNotfication: 'news' },
      });
      expect(sent.statusCode).toBe(200);
    }
    for (const [cookie, username] of [
      [scopedAdmin, 'north.admin'],
      [operator, 'north.office'],
    ] as const) {
      // Asking for someone else's actions, or everyone's, answers one's own.
      for (const query of ['', '?user=admin', '?user=north.office', '?action=user-create']) {
        const items = (await as(t, cookie, { method: 'GET', url: `/api/audit${query}` })).json()
          .items as AuditEntry[];
        expect(
          items.every((e) => e.username === username),
          `${username} ${query}`,
        ).toBe(true);
        if (query === '') expect(items.map((e) => e.action)).toContain('send');
      }
    }
    const all = (await t.inject({ method: 'GET', url: '/api/audit?limit=200' })).json().items as AuditEntry[];
    expect(new Set(all.map((e) => e.username))).toEqual(new Set(['admin', 'north.admin', 'north.office']));
  });
});

describe('Send from the console', () => {
  let t: TestApp;
  let north: number;
  let south: number;
  let northOffice: string;
  let bothOffice: string;
  beforeAll(async () => {
    t = await startTestApp();
    const schools = await twoSchools(t);
    north = schools.north.id;
    south = schools.south.id;
    northOffice = (await addUser(t, 'north.office', 'operator', [north])).cookie;
    bothOffice = (await addUser(t, 'both.office', 'operator', [north, south])).cookie;
  });
  afterAll(() => t.close());

  const send = (cookie: string | undefined, operation: string, payload: Record<string, unknown>) =>
    cookie === undefined
      ? t.inject({ method: 'POST', url: `/api/operations/${operation}`, payload })
      : as(t, cookie, { method: 'POST', url: `/api/operations/${operation}`, payload });
  const notify = (baseUrlSchool: string, extra: Record<string, unknown> = {}) => ({
    id: '7',
    baseUrlSchool,
    TypeNotfication: 'news',
    ...extra,
  });
  const code = (extra: Record<string, unknown> = {}) => ({ code: '4821', phone: '+447911123456', ...extra });

  it('lets staff notify a school restricted to its servers’ addresses: staff are not callers', async () => {
    // The console is at 127.0.0.1, outside South's 198.51.100.0/24.
    const sent = await send(undefined, 'SendNotificationType', notify('https://south.example.org/'));
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json().queued).toBe(1);
    const marks = await send(bothOffice, 'SendMarkNotes', {
      id: '1',
      id_class: '3A',
      baseUrlSchool: 'https://south.example.org',
    });
    expect(marks.statusCode).toBe(200);
    // The same call from the same address by the .asmx door is still refused: the range holds for callers.
    const door = await t.app.inject({
      method: 'GET',
      url: '/NotificationNotes.asmx/SendNotificationType?id=7&baseUrlSchool=https%3A%2F%2Fsouth.example.org%2F&TypeNotfication=news',
    });
    expect(door.statusCode).toBe(403);
    expect(door.body).toBe('Caller 127.0.0.1 is not allowed to send for the school South School.');
  });

  it('lets a user limited to schools notify their own schools only', async () => {
    expect(
      (await send(northOffice, 'SendNotificationType', notify('https://north.example.org/'))).statusCode,
    ).toBe(200);
    const refused = await send(northOffice, 'SendNotificationType', notify('https://south.example.org/'));
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.json().detail).toBe(
      'You may not send for https://south.example.org: your account is limited to other schools.',
    );
    expect(refused.json().errors).toEqual({ baseUrlSchool: refused.json().detail });
    // Recorded as no school's: South's staff do not see North's refused attempt, nor it South's.
    const refusedCall = await t.app.store.db
      .selectFrom('calls')
      .select('school_id')
      .where('id', '=', refused.json().callId)
      .executeTakeFirstOrThrow();
    expect(refusedCall.school_id).toBeNull();
    const marks = await send(northOffice, 'SendMarkNotes', {
      id: '1',
      id_class: '3A',
      baseUrlSchool: 'https://south.example.org',
    });
    expect(marks.statusCode).toBe(403);
    // Refused, recorded, and nothing queued for South.
    const deliveries = await t.app.store.db.selectFrom('deliveries').select('recipient').execute();
    expect(deliveries.filter((d) => d.recipient.includes('south')).length).toBe(2);
  });

  it('asks a user limited to schools which of theirs an AuthCode, a book or pushNoti is for', async () => {
    for (const [operation, payload] of [
      ['AuthCode', code()],
      ['GetBookPdfByTerm', { termId: '1', srid: '2', classId: '3' }],
      ['pushNoti', {}],
    ] as const) {
      const missing = await send(northOffice, operation, payload);
      expect(missing.statusCode, operation).toBe(400);
      expect(missing.json().errors).toEqual({
        schoolId: 'Pick the school this is for: your account is limited to some schools.',
      });
      expect(missing.json().callId).toBeGreaterThan(0);
      const other = await send(northOffice, operation, { ...payload, schoolId: south });
      expect(other.statusCode, operation).toBe(403);
      expect(other.json().detail).toBe(
        'You may not act for that school: your account is limited to other schools.',
      );
    }
    const own = await send(northOffice, 'AuthCode', code({ schoolId: north }));
    expect(own.statusCode).toBe(200);
    expect(own.json().queued).toBe(1);
    const pushed = await send(northOffice, 'pushNoti', { schoolId: north });
    expect(pushed.statusCode).toBe(200);
  });

  it('lets organisation-wide staff name any school, or none, and refuses what names no school', async () => {
    expect((await send(undefined, 'AuthCode', code())).statusCode).toBe(200);
    expect((await send(undefined, 'AuthCode', code({ schoolId: south }))).statusCode).toBe(200);
    const unknown = await send(undefined, 'AuthCode', code({ schoolId: 9999 }));
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().errors).toEqual({ schoolId: 'There is no school with the id 9999.' });
    for (const wrong of ['1', 1.5, -2, true]) {
      const res = await send(undefined, 'AuthCode', code({ schoolId: wrong }));
      expect(res.statusCode, String(wrong)).toBe(400);
      expect(res.json().errors).toEqual({ schoolId: 'Invalid schoolId: it must be a school’s id.' });
    }
    // A school picked and a baseUrlSchool naming another: which one is meant cannot be told.
    const mismatch = await send(
      undefined,
      'SendNotificationType',
      notify('https://north.example.org/', { schoolId: south }),
    );
    expect(mismatch.statusCode).toBe(400);
    expect(mismatch.json().errors.baseUrlSchool).toMatch(/names North School, not the school picked/);
    const matching = await send(
      undefined,
      'SendNotificationType',
      notify('https://north.example.org/', { schoolId: north }),
    );
    expect(matching.statusCode).toBe(200);
  });

  it('records the school picked with the request', async () => {
    const sent = await send(northOffice, 'AuthCode', code({ schoolId: north }));
    const call = await t.inject({ method: 'GET', url: `/api/calls/${sent.json().id}` });
    expect(call.json().request).toContain(`"schoolId":${north}`);
    expect(call.json().request).not.toContain('4821');
  });

  it('lists the schools one may send for, by name', async () => {
    const mine = (await as(t, northOffice, { method: 'GET', url: '/api/operations/schools' })).json();
    expect(mine).toEqual({
      items: [{ id: north, name: 'North School', baseUrl: 'https://north.example.org' }],
      organisationWide: false,
    });
    const all = (await t.inject({ method: 'GET', url: '/api/operations/schools' })).json();
    expect(all.organisationWide).toBe(true);
    expect(all.items.map((s: { name: string }) => s.name)).toEqual(['North School', 'South School']);
  });
});

describe('a live feed open when a user’s schools change', () => {
  it('ends, so that nothing read with the old schools goes on', async () => {
    const t = await startTestApp();
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
      const { north, south } = await twoSchools(t);
      const { user, cookie } = await addUser(t, 'watched', 'operator', [north.id]);
      let ended: number | undefined;
      await new Promise<void>((resolve, reject) => {
        http
          .get(`${base}/api/calls/stream`, { headers: { cookie } }, (res) => {
            res.resume();
            res.on('end', () => {
              ended = Date.now();
            });
            resolve();
          })
          .on('error', reject);
      });
      // Unchanged, it goes on.
      await new Promise((r) => setTimeout(r, SESSION_RECHECK_MS + 500));
      expect(ended).toBeUndefined();
      const changed = await t.inject({
        method: 'PATCH',
        url: `/api/users/${user.id}`,
        payload: { schoolIds: [south.id] },
      });
      expect(changed.statusCode).toBe(200);
      const at = Date.now();
      while (ended === undefined && Date.now() < at + 3 * SESSION_RECHECK_MS)
        await new Promise((r) => setTimeout(r, 50));
      expect(ended, 'the feed did not end').toBeDefined();
      // The session itself goes on, with the new schools.
      const session = (await as(t, cookie, { method: 'GET', url: '/api/session' })).json() as Session;
      expect(session.user.schoolIds).toEqual([south.id]);
    } finally {
      await t.close();
    }
  }, 20_000);
});
