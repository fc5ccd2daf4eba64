import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CallDetail, CallList } from '@school/contract';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../src/auth/password.js';
import { CONSOLE_HEADERS, callRow, lastCall, registerSchool, type TestApp, waitUntil } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

/**
 * Which school a call belongs to (operations/call-school.ts, docs/security.md#who-sees-what),
 * decided as it is recorded, with its deliveries following it; and what staff limited to a
 * school see of another's: nothing, through every route of the API that answers calls,
 * deliveries or figures.
 */

const NS = 'http://tempuri.org/';

const soap11 = (op: string, inner: string) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><${op} xmlns="${NS}">${inner}</${op}></soap:Body></soap:Envelope>`;

/** A SOAP 1.1 call of `op` at `path`, from `remoteAddress`. */
const soapAt = (app: FastifyInstance, path: string, op: string, inner: string, remoteAddress: string) =>
  app.inject({
    method: 'POST',
    url: path,
    remoteAddress,
    headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}${op}"` },
    payload: soap11(op, inner),
  });

/** Registers the schools North and South, in that order, each allowing the callers given. */
async function northAndSouth(
  app: FastifyInstance,
  allowedIps: { north: string; south: string },
): Promise<{ north: number; south: number }> {
  const register = async (key: 'north' | 'south', name: string) =>
    (
      await registerSchool(app, {
        name,
        baseUrl: `https://${key}.example.org`,
        topicKey: key,
        allowedIps: allowedIps[key],
      })
    ).id;
  const north = await register('north', 'North');
  return { north, south: await register('south', 'South') };
}

/** The school and the deliveries' schools of the newest call. */
async function newest(app: FastifyInstance) {
  const call = await lastCall(app);
  const deliveries = await app.outbox.deliveries.search({ callId: call.id }, { limit: 10 });
  return { school: call.school_id, deliveries: deliveries.map((d) => d.school_id) };
}

describe.each(DIALECTS)('the school of a call (%s)', (dialect) => {
  let t: TestApp;
  let north: number;
  let south: number;

  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    ({ north, south } = await northAndSouth(t.app, {
      north: '203.0.113.0/24,192.0.2.50',
      south: '198.51.100.7,192.0.2.50',
    }));
    await registerSchool(t.app, { name: 'Open', baseUrl: 'https://open.example.org', topicKey: 'open' });
  });
  afterAll(() => t.close());

  const soap = (op: string, inner: string, remoteAddress: string) =>
    soapAt(
      t.app,
      op === 'AuthCode' ? '/AuthCodeSending.asmx' : '/NotificationNotes.asmx',
      op,
      inner,
      remoteAddress,
    );

  it('is the school its baseUrlSchool names, and its push is that school’s too', async () => {
    const res = await soap(
      'SendNotificationType',
      '<id>1</id><baseUrlSchool>HTTPS://north.example.org/</baseUrlSchool><TypeNotfication>news</TypeNotfication>',
      '203.0.113.4',
    );
    expect(res.statusCode).toBe(200);
    expect(await newest(t.app)).toEqual({ school: north, deliveries: [north] });
  });

  it('is the named school even when that school refuses the caller’s address', async () => {
    const res = await soap(
      'SendMarkNotes',
      '<id>1</id><id_class>7</id_class><baseUrlSchool>https://south.example.org</baseUrlSchool>',
      '203.0.113.4',
    );
    expect(res.statusCode).toBe(500);
    expect(await newest(t.app)).toEqual({ school: south, deliveries: [] });
  });

  it('is none when the named school is not registered', async () => {
    await soap(
      'SendNotificationType',
      '<id>1</id><baseUrlSchool>https://nowhere.example.org</baseUrlSchool><TypeNotfication>news</TypeNotfication>',
      '203.0.113.4',
    );
    expect((await newest(t.app)).school).toBeNull();
  });

  it('is, for an AuthCode, the one school whose allowed addresses hold the caller', async () => {
    const res = await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '203.0.113.99');
    expect(res.statusCode).toBe(200);
    expect(await newest(t.app)).toEqual({ school: north, deliveries: [north] });
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '198.51.100.7');
    expect(await newest(t.app)).toEqual({ school: south, deliveries: [south] });
  });

  it('is none when several schools hold the address, or none does', async () => {
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '192.0.2.50');
    expect(await newest(t.app)).toEqual({ school: null, deliveries: [null] });
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '198.51.100.8');
    expect(await newest(t.app)).toEqual({ school: null, deliveries: [null] });
  });

  it('is the caller’s school for a refused AuthCode, a book lookup and pushNoti', async () => {
    // A parameter left out (refused before the operation ran) and a book that does not exist.
    expect(
      (
        await t.app.inject({
          method: 'GET',
          url: '/AuthCodeSending.asmx/AuthCode?code=1',
          remoteAddress: '203.0.113.5',
        })
      ).statusCode,
    ).toBe(500);
    expect((await newest(t.app)).school).toBe(north);
    const book = await t.app.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=1&srid=2&classId=3',
      remoteAddress: '198.51.100.7',
    });
    expect(book.statusCode).toBe(404);
    expect((await newest(t.app)).school).toBe(south);
    await t.app.inject({
      method: 'GET',
      url: '/PushNotificationMobile.asmx/pushNoti',
      remoteAddress: '203.0.113.5',
    });
    expect((await newest(t.app)).school).toBe(north);
  });

  it('follows a school registered, changed or removed at once', async () => {
    const school = await registerSchool(t.app, {
      name: 'West',
      baseUrl: 'https://west.example.org',
      topicKey: 'west',
      allowedIps: '100.64.0.1',
    });
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '100.64.0.1');
    expect((await newest(t.app)).school).toBe(school.id);
    await t.app.store.schools.update(school.id, { allowed_ips: '100.64.0.2' });
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '100.64.0.1');
    expect((await newest(t.app)).school).toBeNull();
    await t.app.store.schools.remove(school.id);
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '100.64.0.2');
    expect((await newest(t.app)).school).toBeNull();
  });

  it('is none for a console call made for no school, whatever the address', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/operations/AuthCode',
      remoteAddress: '203.0.113.6',
      payload: { code: '123456', phone: '+447911123456' },
    });
    expect(res.statusCode).toBe(200);
    expect(await newest(t.app)).toEqual({ school: null, deliveries: [null] });
  });

  it('is shown with the call in History and on its page: its id and name, null for none', async () => {
    const east = await registerSchool(t.app, {
      name: 'East Academy',
      baseUrl: 'https://east.example.org',
      topicKey: 'east',
    });
    await soap(
      'SendNotificationType',
      '<id>1</id><baseUrlSchool>https://east.example.org</baseUrlSchool><TypeNotfication>news</TypeNotfication>',
      '203.0.113.4',
    );
    const eastCall = (await lastCall(t.app)).id;
    await t.inject({
      method: 'POST',
      url: '/api/operations/AuthCode',
      payload: { code: '123456', phone: '+447911123456' },
    });
    const noneCall = (await lastCall(t.app)).id;
    const listed = async () => {
      const res = await t.inject({ method: 'GET', url: '/api/calls?limit=2' });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as CallList).items.map((c) => ({ id: c.id, school: c.school }));
    };
    const page = async (id: number) => {
      const res = await t.inject({ method: 'GET', url: `/api/calls/${id}` });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as CallDetail).school;
    };
    const eastSchool = { id: east.id, name: 'East Academy' };
    expect(await listed()).toEqual([
      { id: noneCall, school: null },
      { id: eastCall, school: eastSchool },
    ]);
    expect(await page(eastCall)).toEqual(eastSchool);
    expect(await page(noneCall)).toBeNull();
    // Found by free text too (the search worker's rows).
    const searched = await t.inject({ method: 'GET', url: '/api/calls?q=east.example.org&limit=1' });
    expect((searched.json() as CallList).items[0]).toMatchObject({ id: eastCall, school: eastSchool });
    // Renamed, the call shows the name it has now; deleted, its id and no name (the call keeps it).
    await t.app.store.schools.update(east.id, { name: 'East Academy Trust' });
    expect(await page(eastCall)).toEqual({ id: east.id, name: 'East Academy Trust' });
    await t.app.store.schools.remove(east.id);
    expect(await page(eastCall)).toEqual({ id: east.id, name: null });
    expect((await listed())[1]).toEqual({ id: eastCall, school: { id: east.id, name: null } });
  });
});

/** What shows a school's data in an answer: its base URL, callers, parents' phones, topic, errors. */
const NORTH_MARKS = ['north.example.org', '203.0.113.', '+447911100111', 'school-north'] as const;
const SOUTH_MARKS = [
  'south.example.org',
  '198.51.100.',
  '+447911100222',
  'school-south',
  'South only',
] as const;

const HOUR = 3_600_000;
const PASSWORD = 'a long enough password';

/**
 * Every route of the API, by method and URL as the route table has them, that answers calls,
 * deliveries or figures about them: each is tried below as a user limited to North against
 * South's data. A route added to the API is one of these or one of OTHER_ROUTES, else the test
 * says to classify it.
 */
const READS = [
  'GET /api/calls',
  'GET /api/calls/count',
  'GET /api/calls/stream',
  'GET /api/calls/export',
  'GET /api/calls/:id',
  'GET /api/stats',
  'GET /api/deliveries',
  'GET /api/deliveries/:id',
  'POST /api/deliveries/:id/retry',
  'POST /api/deliveries/retry-dead',
  // Organisation-wide admins' alone: a user limited to schools is refused them.
  'GET /api/audit',
  'GET /api/privacy/report',
  'POST /api/privacy/erase',
] as const;

/** The other routes of the API, and why they answer nothing of a school's calls or deliveries. */
const OTHER_ROUTES: Record<string, string> = {
  'GET /api/openapi.json': 'the API described',
  'GET /api/service': 'the endpoints, providers and storage: no call',
  'POST /api/operations/:name': 'Send: its own test (staff-schools.test.ts)',
  'GET /api/operations/schools': 'the schools one may send for (staff-schools.test.ts)',
};
/** Route prefixes of the API that are about staff, schools, templates and books, not calls. */
const OTHER_PREFIXES = [
  '/api/session',
  '/api/account',
  '/api/setup',
  '/api/sso',
  '/api/users',
  '/api/schools',
  '/api/templates',
  '/api/books',
  '/api/docs',
];

/** The routes of the API in the route table, as `METHOD /url`. */
function apiRoutes(app: FastifyInstance): string[] {
  const out = new Set<string>();
  for (const route of app.routeTable) {
    if (!route.url.startsWith('/api/')) continue;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) if (method !== 'HEAD') out.add(`${method} ${route.url}`);
  }
  return [...out].sort();
}

describe.each(DIALECTS)('what staff limited to a school see of another’s (%s)', (dialect) => {
  let t: TestApp;
  let north: number;
  let south: number;
  /** A user limited to North: an operator, and an admin (an admin limited to schools). */
  let operator: string;
  let admin: string;
  /** South's ids and North's, of calls and deliveries. */
  const ids = { northCall: 0, southCall: 0, northDelivery: 0, southDelivery: 0, southDead: 0 };
  const now = Date.now();
  /** Three days back, mid-hour: rolled up before the reads. */
  const old = Math.floor((now - 3 * 86_400_000) / HOUR) * HOUR + 10 * 60_000;

  const as = (cookie: string, options: InjectOptions): Promise<LightMyRequestResponse> =>
    t.app.inject({ ...options, headers: { ...CONSOLE_HEADERS, cookie, ...(options.headers as object) } });

  async function scopedUser(username: string, role: 'admin' | 'operator'): Promise<string> {
    await t.app.store.users.create({
      username,
      display_name: username,
      role,
      password_hash: await hashPassword(PASSWORD),
      school_ids: JSON.stringify([north]),
    });
    return t.login(username, PASSWORD);
  }

  const soap = (path: string, op: string, inner: string, remoteAddress: string) =>
    soapAt(t.app, path, op, inner, remoteAddress);

  /** A delivery queued at `at` (a call three days back's, rolled up), of `school`. */
  async function oldDelivery(callId: number, school: number | null, recipient: string, at: number) {
    await t.app.store.db
      .insertInto('deliveries')
      .values({
        call_id: callId,
        school_id: school,
        kind: 'sms',
        provider: 'log',
        recipient,
        payload: '{}',
        secret: null,
        status: 'sent',
        attempts: 1,
        next_attempt_at: at,
        lease_until: null,
        leased_by: null,
        expires_at: null,
        idempotency_key: `old-${callId}`,
        provider_id: null,
        provider_status: null,
        unsure_provider: null,
        last_error: null,
        created_at: at,
        updated_at: at,
        sent_at: at,
      })
      .execute();
  }

  beforeAll(async () => {
    t = await startTestAppOn(dialect, { PARTITION_PERIOD: 'day' });
    ({ north, south } = await northAndSouth(t.app, { north: '203.0.113.0/24', south: '198.51.100.0/24' }));
    // Three days back (another partition on PostgreSQL), rolled up: calls of each school and of
    // none, errors among them, and their SMS.
    for (const [school, ip, phone, error] of [
      [north, '203.0.113.20', '+447911100111', 'Invalid phone: North’s caller'],
      [south, '198.51.100.20', '+447911100222', 'Invalid phone: South only'],
      [null, '192.0.2.20', '+447911100333', 'Invalid phone: nobody’s'],
    ] as const) {
      for (let i = 0; i < 3; i++) {
        const id = await t.app.recorder.record(
          callRow({
            at: old + i * 60_000,
            caller_ip: ip,
            phone,
            params: JSON.stringify({ code: '***', phone }),
            school_id: school,
            ...(i === 2 ? { outcome: 'client-error', status: 400, error } : {}),
          }),
        );
        if (i < 2) await oldDelivery(id, school, phone, old + i * 60_000);
      }
    }
    // Now, through the doors: a push for each school, a code from each school's server and one
    // from an address of none.
    for (const [school, ip] of [
      ['north', '203.0.113.4'],
      ['south', '198.51.100.4'],
    ] as const) {
      const pushed = await soap(
        '/NotificationNotes.asmx',
        'SendNotificationType',
        `<id>1</id><baseUrlSchool>https://${school}.example.org</baseUrlSchool><TypeNotfication>news</TypeNotfication>`,
        ip,
      );
      expect(pushed.statusCode).toBe(200);
    }
    for (const [ip, phone] of [
      ['203.0.113.4', '+447911100111'],
      ['198.51.100.4', '+447911100222'],
      ['192.0.2.4', '+447911100333'],
    ] as const) {
      const res = await soap(
        '/AuthCodeSending.asmx',
        'AuthCode',
        `<code>123456</code><phone>${phone}</phone>`,
        ip,
      );
      expect(res.statusCode).toBe(200);
    }
    // Every delivery settles (the log provider), then South's push is made dead, to be retried.
    await waitUntil(async () => {
      const c = await t.app.deliveryRollups.stateCounts();
      return c.pending === 0 && c.sending === 0;
    });
    const rows = await t.app.store.db.selectFrom('deliveries').selectAll().orderBy('id').execute();
    const southPush = rows.find((r) => r.school_id === south && r.kind === 'push');
    const northSms = rows.find((r) => r.school_id === north && r.kind === 'sms' && r.created_at > old + HOUR);
    if (!southPush || !northSms) throw new Error('the deliveries were not queued');
    await t.app.store.db
      .updateTable('deliveries')
      .set({ status: 'dead', last_error: 'refused' })
      .where('id', '=', southPush.id)
      .execute();
    ids.southDead = southPush.id;
    ids.southDelivery = southPush.id;
    ids.northDelivery = northSms.id;
    ids.southCall = southPush.call_id;
    ids.northCall = northSms.call_id;
    // The hours that ended are rolled up (the roll-ups per school with them).
    await t.app.rollups.rollUp(now);
    await t.app.deliveryRollups.rollUp(now);
    expect(await t.app.store.db.selectFrom('school_call_hours').selectAll().execute()).not.toHaveLength(0);
    operator = await scopedUser('nora', 'operator');
    admin = await scopedUser('nadia', 'admin');
  });
  afterAll(() => t.close());

  /** The answer holds North's data (when `north`) and nothing of South's. */
  function onlyNorth(body: string, what: string, { north: expectNorth = true } = {}) {
    for (const mark of SOUTH_MARKS) expect(body, `${what}: ${mark}`).not.toContain(mark);
    if (expectNorth)
      expect(
        NORTH_MARKS.some((m) => body.includes(m)),
        `${what}: North's data`,
      ).toBe(true);
  }

  /** How many calls (and deliveries) North has in [from, to), from the tables. */
  async function northCounts(from: number, to: number) {
    const calls = await t.app.store.db
      .selectFrom('calls')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('school_id', '=', north)
      .where('at', '>=', from)
      .where('at', '<', to)
      .executeTakeFirstOrThrow();
    const deliveries = await t.app.store.db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('school_id', '=', north)
      .where('created_at', '>=', from)
      .where('created_at', '<', to)
      .executeTakeFirstOrThrow();
    return { calls: Number(calls.n), deliveries: Number(deliveries.n) };
  }

  /** Each read, tried by a user limited to North (an operator, then an admin). */
  const tries: Record<(typeof READS)[number], (cookie: string) => Promise<void>> = {
    async 'GET /api/calls'(cookie) {
      for (const query of [
        '',
        '?limit=200',
        '?operation=AuthCode',
        '?outcome=client-error',
        '?binding=soap11',
        '?ip=198.51.100.4',
        '?phone=%2B447911100222',
        '?q=%2B447911100222',
        '?q=south',
        '?q=%22%2B447911100222%22',
        '?delivery=failed',
        `?from=${new Date(old - HOUR).toISOString()}&to=${new Date(old + HOUR).toISOString()}`,
      ]) {
        const res = await as(cookie, { method: 'GET', url: `/api/calls${query}` });
        expect(res.statusCode, query).toBe(200);
        const body = res.json() as { items: { id: number }[] };
        const expectNorth = !/198\.51|100222|south|failed/.test(query);
        // A number searched for is named back (`search.phone`): the calls are what must not show.
        onlyNorth(JSON.stringify(body.items), `GET /api/calls${query}`, { north: expectNorth });
        if (!expectNorth) expect(body.items, query).toEqual([]);
      }
    },
    async 'GET /api/calls/count'(cookie) {
      const all = await as(cookie, { method: 'GET', url: '/api/calls/count' });
      expect(all.json()).toEqual({ count: (await northCounts(0, now + HOUR)).calls, more: false });
      for (const query of ['?ip=198.51.100.4', '?phone=%2B447911100222', '?delivery=failed']) {
        const res = await as(cookie, { method: 'GET', url: `/api/calls/count${query}` });
        expect(res.json(), query).toEqual({ count: 0, more: false });
      }
    },
    async 'GET /api/calls/stream'(cookie) {
      // Over a real socket: South's call comes first, then North's; only North's arrives.
      const address = t.app.server.address() as AddressInfo | null;
      if (!address) await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as AddressInfo;
      let text = '';
      const res = await new Promise<http.IncomingMessage>((resolve) => {
        http.get(`http://127.0.0.1:${port}/api/calls/stream`, { headers: { cookie } }, resolve);
      });
      expect(res.statusCode).toBe(200);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      await waitUntil(() => text.includes(': connected'));
      await soap(
        '/AuthCodeSending.asmx',
        'AuthCode',
        '<code>1</code><phone>+447911100222</phone>',
        '198.51.100.5',
      );
      await soap(
        '/AuthCodeSending.asmx',
        'AuthCode',
        '<code>1</code><phone>+447911100333</phone>',
        '192.0.2.5',
      );
      await soap(
        '/AuthCodeSending.asmx',
        'AuthCode',
        '<code>1</code><phone>+447911100111</phone>',
        '203.0.113.5',
      );
      await waitUntil(() => text.includes('event: call'));
      res.destroy();
      expect(text.match(/event: call/g)).toHaveLength(1);
      onlyNorth(text, 'the live tail');
      expect(text).not.toContain('+447911100333');
    },
    async 'GET /api/calls/export'(cookie) {
      for (const query of [
        'format=csv',
        'format=json',
        'format=csv&q=%2B4479111002',
        'format=json&ip=198.51.100.4',
      ]) {
        const res = await as(cookie, { method: 'GET', url: `/api/calls/export?${query}` });
        expect(res.statusCode, query).toBe(200);
        onlyNorth(res.body, `export ${query}`, { north: !query.includes('&') });
      }
      const csv = await as(cookie, { method: 'GET', url: '/api/calls/export?format=csv' });
      expect(csv.body.trim().split('\n')).toHaveLength(1 + (await northCounts(0, now + HOUR)).calls);
    },
    async 'GET /api/calls/:id'(cookie) {
      const mine = await as(cookie, { method: 'GET', url: `/api/calls/${ids.northCall}` });
      expect(mine.statusCode).toBe(200);
      const theirs = await as(cookie, { method: 'GET', url: `/api/calls/${ids.southCall}` });
      expect(theirs.statusCode).toBe(404);
      expect(theirs.json()).toMatchObject({ detail: `There is no call ${ids.southCall}.` });
      // A call of no school is organisation-wide staff's only.
      const nobodys = await t.app.store.db
        .selectFrom('calls')
        .select('id')
        .where('school_id', 'is', null)
        .executeTakeFirstOrThrow();
      expect((await as(cookie, { method: 'GET', url: `/api/calls/${nobodys.id}` })).statusCode).toBe(404);
    },
    async 'GET /api/stats'(cookie) {
      // Four days by hour: three days back from the roll-ups (North's own), today from the calls.
      const from = now - 4 * 86_400_000;
      const to = now + 60_000;
      const res = await as(cookie, {
        method: 'GET',
        url: `/api/stats?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&bucket=hour`,
      });
      expect(res.statusCode).toBe(200);
      onlyNorth(res.body, 'GET /api/stats', { north: false });
      const stats = res.json() as {
        rows: { count: number }[];
        errors: { error: string | null }[];
        deliveries: { sent: number; logged: number; dead: number; expired: number; waiting: number }[];
      };
      const expected = await northCounts(from, to);
      expect(stats.rows.reduce((n, r) => n + r.count, 0)).toBe(expected.calls);
      expect(stats.errors.map((e) => e.error)).toEqual(['Invalid phone: North’s caller']);
      const delivered = stats.deliveries.reduce(
        (n, r) => n + r.sent + r.logged + r.dead + r.expired + r.waiting,
        0,
      );
      expect(delivered).toBe(expected.deliveries);
      // The organisation's figures hold South's too.
      const all = await t.inject({
        method: 'GET',
        url: `/api/stats?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&bucket=hour`,
      });
      expect(all.body).toContain('South only');
    },
    async 'GET /api/deliveries'(cookie) {
      for (const query of [
        '',
        '?status=dead',
        '?kind=push',
        '?recipient=100222',
        '?recipient=south',
        `?callId=${ids.southCall}`,
      ]) {
        const res = await as(cookie, { method: 'GET', url: `/api/deliveries${query}` });
        expect(res.statusCode, query).toBe(200);
        const body = res.json() as { items: unknown[]; counts: Record<string, number> };
        const expectNorth = query === '' || query === '?kind=push';
        onlyNorth(JSON.stringify(body.items), `GET /api/deliveries${query}`, { north: expectNorth });
        if (!expectNorth) expect(body.items, query).toEqual([]);
        // The counts are North's: none of them dead.
        const total = Object.values(body.counts).reduce((a, b) => a + b, 0);
        expect(total, query).toBe((await northCounts(0, now + HOUR)).deliveries);
        expect(body.counts.dead, query).toBe(0);
      }
    },
    async 'GET /api/deliveries/:id'(cookie) {
      expect(
        (await as(cookie, { method: 'GET', url: `/api/deliveries/${ids.northDelivery}` })).statusCode,
      ).toBe(200);
      const theirs = await as(cookie, { method: 'GET', url: `/api/deliveries/${ids.southDelivery}` });
      expect(theirs.statusCode).toBe(404);
      expect(theirs.json()).toMatchObject({ detail: `There is no delivery ${ids.southDelivery}.` });
    },
    async 'POST /api/deliveries/:id/retry'(cookie) {
      const res = await as(cookie, { method: 'POST', url: `/api/deliveries/${ids.southDead}/retry` });
      expect(res.statusCode).toBe(404);
      const row = await t.app.outbox.deliveries.findById(ids.southDead);
      expect(row?.status).toBe('dead');
    },
    async 'POST /api/deliveries/retry-dead'(cookie) {
      const res = await as(cookie, { method: 'POST', url: '/api/deliveries/retry-dead' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ retried: 0 });
      expect((await t.app.outbox.deliveries.findById(ids.southDead))?.status).toBe('dead');
    },
    async 'GET /api/audit'(cookie) {
      // Their own actions at most (staff-schools.test.ts): nothing of South's calls.
      const res = await as(cookie, { method: 'GET', url: '/api/audit?limit=200' });
      expect([200, 403]).toContain(res.statusCode);
      onlyNorth(res.body, 'GET /api/audit', { north: false });
    },
    async 'GET /api/privacy/report'(cookie) {
      const res = await as(cookie, { method: 'GET', url: '/api/privacy/report?phone=%2B447911100222' });
      expect(res.statusCode).toBe(403);
    },
    async 'POST /api/privacy/erase'(cookie) {
      const res = await as(cookie, {
        method: 'POST',
        url: '/api/privacy/erase',
        payload: { phone: '+447911100222' },
      });
      expect(res.statusCode).toBe(403);
    },
  };

  it('has every route of the API that answers calls, deliveries or figures among those tried', () => {
    const unclassified = apiRoutes(t.app).filter(
      (route) =>
        !(READS as readonly string[]).includes(route) &&
        !(route in OTHER_ROUTES) &&
        !OTHER_PREFIXES.some((prefix) => route.split(' ')[1]?.startsWith(prefix)),
    );
    expect(unclassified, 'add each to READS (and tries) or OTHER_ROUTES').toEqual([]);
    for (const route of READS) expect(apiRoutes(t.app), route).toContain(route);
  });

  for (const route of READS) {
    it(`shows nothing of another school's: ${route}`, async () => {
      await tries[route](operator);
      await tries[route](admin);
    });
  }

  it('shows a user limited to two schools both, and nothing of no school’s', async () => {
    await t.app.store.users.create({
      username: 'nick',
      display_name: 'nick',
      role: 'operator',
      password_hash: await hashPassword(PASSWORD),
      school_ids: JSON.stringify([north, south]),
    });
    const cookie = await t.login('nick', PASSWORD);
    const both = async (from: number, to: number) => {
      const row = await t.app.store.db
        .selectFrom('calls')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('school_id', 'in', [north, south])
        .where('at', '>=', from)
        .where('at', '<', to)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    };
    const list = await as(cookie, { method: 'GET', url: '/api/calls?limit=200' });
    for (const mark of ['+447911100111', '+447911100222']) expect(list.body).toContain(mark);
    expect(list.body).not.toContain('+447911100333');
    // Each call says which of their schools it is.
    const schoolsListed = new Set((list.json() as CallList).items.map((c) => JSON.stringify(c.school)));
    expect([...schoolsListed].sort()).toEqual(
      [
        { id: north, name: 'North' },
        { id: south, name: 'South' },
      ]
        .map((s) => JSON.stringify(s))
        .sort(),
    );
    const count = await as(cookie, { method: 'GET', url: '/api/calls/count?operation=AuthCode' });
    const authCodes = await t.app.store.db
      .selectFrom('calls')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('school_id', 'in', [north, south])
      .where('operation', '=', 'AuthCode')
      .executeTakeFirstOrThrow();
    expect(count.json()).toEqual({ count: Number(authCodes.n), more: false });
    const from = now - 4 * 86_400_000;
    const stats = await as(cookie, {
      method: 'GET',
      url: `/api/stats?from=${new Date(from).toISOString()}&to=${new Date(now + 60_000).toISOString()}&bucket=hour`,
    });
    const rows = (stats.json() as { rows: { count: number }[] }).rows;
    expect(rows.reduce((n, r) => n + r.count, 0)).toBe(await both(from, now + 60_000));
  });

  it('shows organisation-wide staff every school’s and none’s', async () => {
    const res = await t.inject({ method: 'GET', url: '/api/calls?limit=200' });
    for (const mark of [...NORTH_MARKS.slice(0, 3), ...SOUTH_MARKS.slice(0, 3), '+447911100333'])
      expect(res.body, mark).toContain(mark);
    // Each call with its school, or none.
    const schoolsListed = new Set((res.json() as CallList).items.map((c) => c.school?.name ?? null));
    expect(schoolsListed).toEqual(new Set(['North', 'South', null]));
    expect((await t.inject({ method: 'GET', url: `/api/calls/${ids.southCall}` })).statusCode).toBe(200);
    expect((await t.inject({ method: 'GET', url: `/api/deliveries/${ids.southDelivery}` })).statusCode).toBe(
      200,
    );
  });
});
