import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from './admin-process.js';
import { CONSOLE_HEADERS, TEST_ADMIN, type TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

// `pnpm admin`, the built command (dist/admin.js), run as a process beside a running server on
// the same store, as an operator would on the server's machine.

describe.each(DIALECTS)('pnpm admin (%s)', (dialect) => {
  let t: TestApp;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    env = {
      PATH: process.env.PATH ?? '',
      ...(t.config.DATABASE_URL ? { DATABASE_URL: t.config.DATABASE_URL } : { DATA_DIR: t.dataDir }),
    };
  });
  afterAll(() => t.close());

  const admin = (args: string[], stdin = '') => runAdmin(args, env, stdin);
  const logIn = (username: string, password: string, code?: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/session',
      headers: CONSOLE_HEADERS,
      payload: { username, password, ...(code ? { code } : {}) },
    });
  const whoAmI = (cookie: string) =>
    t.app.inject({ method: 'GET', url: '/api/calls', headers: { ...CONSOLE_HEADERS, cookie } });
  const cliAudit = async () =>
    (await t.app.store.audit.search({}, { limit: 100 }))
      .filter((r) => r.username?.startsWith('cli:'))
      .map((r) => ({ action: r.action, target: r.target, details: JSON.parse(r.details ?? '{}') }));

  it('creates a user with the password from standard input; the server lets them in', async () => {
    const made = await admin(
      ['users', 'create', 'Rita', '--role', 'operator', '--display-name', 'Rita R', '--password-stdin'],
      'rita password 1\n',
    );
    expect(made).toMatchObject({ status: 0, stdout: 'Created operator rita.\n' });
    expect((await logIn('rita', 'rita password 1')).statusCode).toBe(200);
    // Again: refused, exit 3.
    const again = await admin(
      ['users', 'create', 'rita', '--role', 'operator', '--password-stdin'],
      'x password 12\n',
    );
    expect(again.status).toBe(3);
    expect(again.stderr).toContain('There is already a user named rita.');
    expect((await cliAudit())[0]).toMatchObject({
      action: 'user-create',
      target: expect.stringMatching(/\(rita\)$/),
      details: { role: 'operator', displayName: 'Rita R', by: 'command line' },
    });
  });

  it('never takes a password from the arguments, nor a short one from standard input', async () => {
    const argument = await admin([
      'users',
      'create',
      'sam',
      '--role',
      'operator',
      '--password',
      'in the history',
    ]);
    expect(argument.status).toBe(1);
    expect(argument.stderr).toContain('use --password-stdin');
    const short = await admin(
      ['users', 'create', 'sam', '--role', 'operator', '--password-stdin'],
      'short\n',
    );
    expect(short.status).toBe(1);
    expect(short.stderr).toContain('Use at least 10 characters.');
    const none = await admin(['users', 'create', 'sam', '--role', 'operator', '--password-stdin'], '');
    expect(none).toMatchObject({ status: 1, stderr: 'Standard input held no password.\n' });
    expect(await t.app.store.users.findByUsername('sam')).toBeUndefined();
  });

  it('lists users with role, enabled, second factor, last login and schools', async () => {
    const list = await admin(['users', 'list']);
    expect(list.status).toBe(0);
    const [header, ...rows] = list.stdout.trimEnd().split('\n');
    expect(header?.split(/\s{2,}/)).toEqual([
      'USERNAME',
      'DISPLAY NAME',
      'ROLE',
      'ENABLED',
      '2FA',
      'SSO',
      'LAST LOGIN',
      'SCHOOLS',
    ]);
    expect(rows.find((r) => r.startsWith('rita '))?.split(/\s{2,}/)).toEqual([
      'rita',
      'Rita R',
      'operator',
      'yes',
      'no',
      'no',
      expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      'All schools',
    ]);
    const json = JSON.parse((await admin(['users', 'list', '--json'])).stdout) as {
      username: string;
      schools: unknown;
    }[];
    expect(json.map((u) => [u.username, u.schools]).sort()).toEqual([
      ['admin', null],
      ['rita', null],
    ]);
  });

  it('resets a password and ends the user’s sessions at once, the server running', async () => {
    const login = await logIn('rita', 'rita password 1');
    const cookie = `session=${login.cookies.find((c) => c.name === 'session')?.value}`;
    expect((await whoAmI(cookie)).statusCode).toBe(200);
    const reset = await admin(['users', 'reset-password', 'rita', '--password-stdin'], 'rita password 2\r\n');
    // This session and the one the first test opened.
    expect(reset).toMatchObject({ status: 0, stdout: 'New password set for rita; 2 sessions ended.\n' });
    expect((await whoAmI(cookie)).statusCode).toBe(401);
    expect((await logIn('rita', 'rita password 1')).statusCode).toBe(401);
    expect((await logIn('rita', 'rita password 2')).statusCode).toBe(200);
  });

  it('resets a lost second factor', async () => {
    const cookie = `session=${(await logIn('rita', 'rita password 2')).cookies.find((c) => c.name === 'session')?.value}`;
    const headers = { ...CONSOLE_HEADERS, cookie };
    const { secret } = (
      await t.app.inject({
        method: 'POST',
        url: '/api/session/totp',
        headers,
        payload: { password: 'rita password 2' },
      })
    ).json();
    const code = TOTP.generate({ secret: Secret.fromBase32(secret) });
    await t.app.inject({ method: 'PUT', url: '/api/session/totp', headers, payload: { code } });
    expect((await logIn('rita', 'rita password 2')).json().secondFactorRequired).toBe(true);
    const reset = await admin(['users', 'reset-2fa', 'rita']);
    expect(reset.status).toBe(0);
    expect(reset.stdout).toMatch(/^Second factor of rita removed; \d+ sessions? ended\.\n$/);
    expect((await logIn('rita', 'rita password 2')).statusCode).toBe(200);
    expect((await cliAudit())[0]).toMatchObject({ action: 'totp-reset', details: { hadSecondFactor: true } });
  });

  it('disables and enables, sets roles, and holds the last enabled admin rule', async () => {
    expect((await admin(['users', 'disable', 'rita'])).status).toBe(0);
    expect((await logIn('rita', 'rita password 2')).statusCode).toBe(401);
    expect((await admin(['users', 'enable', 'rita'])).status).toBe(0);
    expect((await logIn('rita', 'rita password 2')).statusCode).toBe(200);

    const lastAdmin = await admin(['users', 'set-role', 'admin', 'operator']);
    expect(lastAdmin.status).toBe(3);
    expect(lastAdmin.stderr).toContain('admin is the last enabled admin');
    expect((await admin(['users', 'disable', 'admin'])).status).toBe(3);
    // Another admin first: then it may.
    expect(await admin(['users', 'set-role', 'rita', 'admin'])).toMatchObject({
      status: 0,
      stdout: 'rita is now an admin.\n',
    });
    expect((await admin(['users', 'set-role', 'admin', 'operator'])).status).toBe(0);
    expect((await t.app.store.users.findByUsername('admin'))?.role).toBe('operator');
    expect((await admin(['users', 'set-role', 'admin', 'admin'])).status).toBe(0);
    expect((await admin(['users', 'set-role', 'admin', 'superuser'])).status).toBe(1);
  });

  it('revokes sessions, and says exit 2 for a user that is not there', async () => {
    const cookie = `session=${(await logIn(TEST_ADMIN.username, TEST_ADMIN.password)).cookies.find((c) => c.name === 'session')?.value}`;
    const revoke = await admin(['sessions', 'revoke', 'ADMIN']);
    expect(revoke.status).toBe(0);
    expect(revoke.stdout).toMatch(/^\d+ sessions? of admin ended\.\n$/);
    expect((await whoAmI(cookie)).statusCode).toBe(401);
    for (const command of ['reset-password', 'reset-2fa', 'disable', 'enable']) {
      const missing = await admin(['users', command, 'nobody'], 'some password 1\n');
      expect(missing.status, command).toBe(2);
      expect(missing.stderr).toContain('There is no user named nobody.');
    }
    expect((await admin(['sessions', 'revoke', 'nobody'])).status).toBe(2);
    expect((await cliAudit()).map((e) => e.action)).toContain('sessions-revoke');
  });

  it('limits a user to schools by id, as the API does, from their next request, and lists them', async () => {
    const school = async (name: string, key: string) =>
      (
        await t.app.store.schools.create({
          name,
          base_url: `https://${key}.example.org`,
          topic_key: key,
          allowed_ips: null,
        })
      ).id;
    const north = await school('North High', 'north');
    const south = await school('South Primary', 'south');
    const schools = await admin(['schools', 'list']);
    expect(schools.status).toBe(0);
    expect(
      schools.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split(/\s{2,}/)),
    ).toEqual([
      ['ID', 'NAME', 'BASE URL'],
      [String(north), 'North High', 'https://north.example.org'],
      [String(south), 'South Primary', 'https://south.example.org'],
    ]);
    expect(JSON.parse((await admin(['schools', 'list', '--json'])).stdout)).toEqual([
      { id: north, name: 'North High', baseUrl: 'https://north.example.org' },
      { id: south, name: 'South Primary', baseUrl: 'https://south.example.org' },
    ]);

    // Made limited to both; logged in, the server knows them so.
    const made = await admin(
      [
        'users',
        'create',
        'lena',
        '--role',
        'operator',
        '--schools',
        `${south}, ${north}`,
        '--password-stdin',
      ],
      'lena password 1\n',
    );
    expect(made).toMatchObject({
      status: 0,
      stdout: `Created operator lena, limited to North High (${north}), South Primary (${south}).\n`,
    });
    const cookie = `session=${(await logIn('lena', 'lena password 1')).cookies.find((c) => c.name === 'session')?.value}`;
    const session = async () =>
      (
        await t.app.inject({ method: 'GET', url: '/api/session', headers: { ...CONSOLE_HEADERS, cookie } })
      ).json().user.schoolIds;
    expect(await session()).toEqual([north, south]);
    expect((await cliAudit())[0]).toMatchObject({
      action: 'user-create',
      details: { role: 'operator', schoolIds: [north, south], by: 'command line' },
    });
    const row = async (name: string) =>
      (await admin(['users', 'list'])).stdout
        .split('\n')
        .find((r) => r.startsWith(`${name} `))
        ?.split(/\s{2,}/)
        .at(-1);
    expect(await row('lena')).toBe(`North High (${north}), South Primary (${south})`);

    // Changed: it holds at the user's next request, without a new login.
    expect(await admin(['users', 'set-schools', 'lena', String(north)])).toMatchObject({
      status: 0,
      stdout: `lena is now limited to North High (${north}).\n`,
    });
    expect(await session()).toEqual([north]);
    expect((await cliAudit())[0]).toMatchObject({
      action: 'user-update',
      target: expect.stringMatching(/\(lena\)$/),
      details: { schoolIds: { from: [north, south], to: [north] } },
    });

    // An id no school has: refused in the API's words, nothing changed; text that is no id: usage.
    const api = await t.inject({
      method: 'PATCH',
      url: `/api/users/${(await t.app.store.users.findByUsername('lena'))?.id}`,
      payload: { schoolIds: [north, 999] },
    });
    expect(api.statusCode).toBe(400);
    const unknown = await admin(['users', 'set-schools', 'lena', `${north},999`]);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain(api.json().detail);
    expect(unknown.stderr).toContain('There is no school with the id 999.');
    const twoUnknown = await admin(
      ['users', 'create', 'max', '--role', 'operator', '--schools', '998,999', '--password-stdin'],
      'max password 12\n',
    );
    expect(twoUnknown.status).toBe(1);
    expect(twoUnknown.stderr).toContain('There are no schools with the ids 998, 999.');
    expect(await t.app.store.users.findByUsername('max')).toBeUndefined();
    for (const bad of ['north', '0;5']) {
      const wrong = await admin(['users', 'set-schools', 'lena', bad]);
      expect(wrong.status, bad).toBe(1);
      expect(wrong.stderr, bad).toContain('Give the schools by id, separated by commas (3,5), or all');
    }
    expect(await session()).toEqual([north]);

    // A school deleted since is named as such, never read as every school.
    await t.app.store.users.update((await t.app.store.users.findByUsername('lena'))?.id as number, {
      school_ids: JSON.stringify([north, south]),
    });
    await t.app.store.schools.remove(south);
    expect(await row('lena')).toBe(`North High (${north}), school ${south} (deleted)`);
    const json = JSON.parse((await admin(['users', 'list', '--json'])).stdout) as {
      username: string;
      schools: unknown;
    }[];
    expect(json.find((u) => u.username === 'lena')?.schools).toEqual([
      { id: north, name: 'North High' },
      { id: south, name: null },
    ]);

    // Every school again.
    expect(await admin(['users', 'set-schools', 'lena', 'all'])).toMatchObject({
      status: 0,
      stdout: 'lena now sees every school.\n',
    });
    expect(await session()).toBeNull();
    expect(await row('lena')).toBe('All schools');

    // The last enabled admin of every school cannot be limited; an admin made limited is not one.
    expect(await admin(['users', 'set-schools', 'rita', String(north)])).toMatchObject({ status: 0 });
    const last = await admin(['users', 'set-schools', 'admin', String(north)]);
    expect(last.status).toBe(3);
    expect(last.stderr).toContain('admin is the last enabled admin of every school');
    expect(await row('admin')).toBe('All schools');
    expect((await admin(['users', 'set-schools', 'rita', 'all'])).status).toBe(0);
    // A command run two dozen times: a process each.
  }, 90_000);

  it('explains itself: --help on each command, usage on a wrong one', async () => {
    const top = await admin(['--help']);
    expect(top.status).toBe(0);
    expect(top.stdout).toContain('users reset-2fa NAME');
    for (const command of [
      'users list',
      'users create',
      'users reset-password',
      'users reset-2fa',
      'users disable',
      'users enable',
      'users set-role',
      'users set-schools',
      'sessions revoke',
      'schools list',
    ]) {
      const help = await admin([...command.split(' '), '--help']);
      expect(help.stdout, command).toContain(`Usage: pnpm admin ${command}`);
    }
    const wrong = await admin(['users', 'frob']);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain('Unknown command: users frob.');
  });
});

describe('pnpm admin without its database', () => {
  it('says it cannot reach PostgreSQL, within seconds, exit 1', async () => {
    const started = Date.now();
    const result = await runAdmin(['users', 'list'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none' });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('Failed: the database could not be reached within 10 s');
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 30_000);
});
