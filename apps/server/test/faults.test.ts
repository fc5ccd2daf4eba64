/**
 * The faults an operator meets on a bad day (docs/monitoring.md#faults), each with the real server
 * process (dist/server.js) and a fake SMS gateway that counts what it is asked:
 *
 * - PostgreSQL's connections severed (a restart), refused (an outage) and hung, through a TCP
 *   fault proxy, under load;
 * - a private PostgreSQL cluster stopped and started for real;
 * - the server started while PostgreSQL is down, and with a database that does not exist;
 * - the disk under a SQLite store filled for real (a small tmpfs, where this machine lets a test
 *   mount one).
 *
 * Each asserts what a caller and an operator see: the process survives, /readyz follows, every call
 * answered 200 is recorded, and every accepted code reaches the gateway exactly once.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from './fault-proxy.js';
import { consoleFetch, TEST_CODE_KEY, waitUntil } from './helpers.js';
import { type FreshDatabase, freshPostgres, TEST_DATABASE_URL } from './pg.js';
import { type PrivatePostgres, privatePostgresAvailable, startPrivatePostgres } from './private-postgres.js';
import {
  authCodeOverGet,
  inParallel,
  type ServerProcess,
  startServerProcess,
  testPhone,
} from './server-process.js';
import { gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

const NS = 'http://tempuri.org/';
const UNAVAILABLE = 'The service is temporarily unavailable; nothing was done. Try again in a few seconds.';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The settings every server here runs with: SMS through `gateway`, quick sweeps, no limits. */
const serverEnv = (gateway: SmsGateway): Record<string, string> => ({
  ...gatewayEnv(gateway),
  CODE_ENCRYPTION_KEY: TEST_CODE_KEY,
  SMS_CONCURRENCY: '16',
  DISPATCH_POLL_MS: '200',
  // Leases of 3 × 1 s + 5 s: an outage longer than that must still send nothing twice.
  PROVIDER_TIMEOUT_MS: '1000',
  AUTHCODE_LIMIT_PER_PHONE: 'off',
  AUTHCODE_LIMIT_PER_IP: 'off',
  AUTHCODE_LIMIT_PER_RANGE: 'off',
  ASMX_LIMIT_PER_IP: 'off',
});

/**
 * Callers at about 80 calls a second (8 clients, a pause of 100 ms each), each call an AuthCode to
 * a phone of its own; `stop` ends them and answers each phone's status (0: no answer at all).
 */
function startLoad(
  url: string,
  first: number,
): { stop(): Promise<Map<string, number>>; slowestSince(at: number): number } {
  const statuses = new Map<string, number>();
  /** Each call's start and how long its answer took (ms). */
  const timings: { at: number; ms: number }[] = [];
  let next = first;
  let running = true;
  const clients = inParallel(8, 8, async () => {
    while (running) {
      const phone = testPhone(next++);
      const at = Date.now();
      statuses.set(phone, await authCodeOverGet(url, phone, String(100_000 + (next % 800_000))));
      timings.push({ at, ms: Date.now() - at });
      await sleep(100);
    }
  });
  return {
    async stop() {
      running = false;
      await clients;
      return statuses;
    },
    /** The longest wait for an answer among the calls begun at or after `at`. */
    slowestSince: (at) => Math.max(0, ...timings.filter((t) => t.at >= at).map((t) => t.ms)),
  };
}

/** /readyz's status now (0: no answer). */
async function readyz(url: string): Promise<number> {
  try {
    const res = await fetch(`${url}/readyz`);
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** How long until /readyz answers `status` (ms), looking every 50 ms. */
async function timeUntilReady(url: string, status: 200 | 503, timeoutMs: number): Promise<number> {
  const start = Date.now();
  await waitUntil(async () => (await readyz(url)) === status, {
    timeoutMs,
    intervalMs: 50,
    what: `/readyz ${status}`,
  });
  return Date.now() - start;
}

const soap = (version: '1.1' | '1.2', code: string): RequestInit => ({
  method: 'POST',
  headers:
    version === '1.1'
      ? { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` }
      : { 'content-type': 'application/soap+xml; charset=utf-8' },
  body: `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${version === '1.1' ? 'http://schemas.xmlsoap.org/soap/envelope/' : 'http://www.w3.org/2003/05/soap-envelope'}"><soap:Body><AuthCode xmlns="${NS}"><code>${code}</code><phone>+447911000001</phone></AuthCode></soap:Body></soap:Envelope>`,
});

/** What each door answers while calls cannot be taken: the binding's own terms, Retry-After. */
async function expectUnavailable(
  url: string,
  api: (path: string, init?: RequestInit) => Promise<Response>,
): Promise<void> {
  for (const version of ['1.1', '1.2'] as const) {
    const res = await fetch(`${url}/AuthCodeSending.asmx`, soap(version, '4242'));
    expect(res.status, `SOAP ${version}`).toBe(500);
    expect(res.headers.get('retry-after'), `SOAP ${version}`).toMatch(/^\d+$/);
    const body = await res.text();
    expect(body).toContain(version === '1.1' ? '<faultcode>soap:Server</faultcode>' : 'soap:Receiver');
    expect(body).toContain(`Server was unable to process request. ---&gt; ${UNAVAILABLE}`);
  }
  const get = await fetch(`${url}/AuthCodeSending.asmx/AuthCode?code=1&phone=%2B447911000001`);
  expect(get.status).toBe(503);
  expect(get.headers.get('content-type')).toBe('text/plain; charset=utf-8');
  expect(get.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(await get.text()).toBe(UNAVAILABLE);
  const post = await fetch(`${url}/AuthCodeSending.asmx/AuthCode`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'code=1&phone=%2B447911000001',
  });
  expect(post.status).toBe(503);
  await post.arrayBuffer();
  // The console's API: a problem, whatever the route (here a read and a Send).
  for (const res of [
    await api('/api/calls?limit=5'),
    await api('/api/operations/AuthCode', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: '1', phone: '+447911000001' }),
    }),
  ]) {
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/database cannot be reached/);
  }
  // Liveness stays: the process is alive, and says the database is not.
  const health = await fetch(`${url}/healthz`);
  expect(health.status).toBe(200);
  expect(await health.json()).toMatchObject({ status: 'ok', database: 'down' });
}

/**
 * What the load got: only 200 or 503 (never a refused connection, never another failure), every
 * 200 recorded in the database, and its code at the gateway exactly once.
 */
async function expectNothingLost(
  statuses: Map<string, number>,
  db: pg.Pool,
  gateway: SmsGateway,
): Promise<void> {
  const byStatus = new Map<number, number>();
  for (const s of statuses.values()) byStatus.set(s, (byStatus.get(s) ?? 0) + 1);
  expect([...byStatus.keys()].filter((s) => s !== 200 && s !== 503)).toEqual([]);
  const accepted = [...statuses].filter(([, s]) => s === 200).map(([phone]) => phone);
  expect(accepted.length).toBeGreaterThan(20);
  const recorded = await db.query<{ phone: string }>(
    "SELECT params::json->>'phone' AS phone FROM calls WHERE operation = 'AuthCode' AND outcome = 'ok'",
  );
  const recordedPhones = new Set(recorded.rows.map((r) => r.phone));
  expect(accepted.filter((p) => !recordedPhones.has(p))).toEqual([]);
  await waitUntil(
    () => {
      const sentTo = new Set(gateway.sent.map((m) => m.to));
      return accepted.every((p) => sentTo.has(p));
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'every accepted code at the gateway' },
  );
  await waitUntil(
    async () =>
      Number(
        (await db.query<{ n: string }>("SELECT count(*) AS n FROM deliveries WHERE status <> 'sent'")).rows[0]
          ?.n,
      ) === 0,
    { timeoutMs: 30_000, intervalMs: 200, what: 'the outbox to settle' },
  );
  // Exactly once: one message per phone, and no idempotency key asked for twice.
  const perPhone = new Map<string, number>();
  for (const m of gateway.sent) perPhone.set(m.to, (perPhone.get(m.to) ?? 0) + 1);
  expect([...perPhone.values()].filter((n) => n !== 1)).toEqual([]);
  expect([...gateway.requestsByKey.values()].filter((n) => n !== 1)).toEqual([]);
}

/** The server's log: no crash, no uncaught error. */
function expectNoCrash(server: ServerProcess): void {
  expect(server.child.exitCode).toBeNull();
  expect(server.output()).not.toMatch(/uncaught|"level":60/);
}

describe.skipIf(!TEST_DATABASE_URL)('PostgreSQL faults through a TCP proxy', () => {
  let database: FreshDatabase;
  let proxy: FaultProxy;
  let gateway: SmsGateway;
  let server: ServerProcess;
  let db: pg.Pool;

  beforeAll(async () => {
    database = await freshPostgres();
    const target = new URL(database.url);
    proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 5432) });
    gateway = await startSmsGateway(20);
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    server = await startServerProcess({ ...serverEnv(gateway), DATABASE_URL: proxy.url(database.url) });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await proxy?.close();
    await gateway?.close();
    await db?.end();
    await database?.drop();
  });

  it('rides out a restart and an outage under load: 503 while down, back by itself, nothing lost or sent twice', async () => {
    const api = await consoleFetch(server.url);
    const load = startLoad(server.url, 0);
    await sleep(1500);
    // A restart: every connection dropped at once, the pool's, the watch's, a transaction's.
    proxy.sever();
    await sleep(1500);
    expectNoCrash(server);
    // An outage: nothing can connect.
    await proxy.refuse();
    const noticed = await timeUntilReady(server.url, 503, 10_000);
    await expectUnavailable(server.url, api);
    await sleep(2000);
    await proxy.heal();
    const recovered = await timeUntilReady(server.url, 200, 10_000);
    await sleep(1500);
    const statuses = await load.stop();
    expectNoCrash(server);
    console.info(
      `PostgreSQL outage: /readyz 503 after ${noticed} ms, 200 again ${recovered} ms after it was back`,
    );
    // Back by itself within 2 s of the database answering (the watch tries every 500 ms).
    expect(recovered).toBeLessThan(2000);
    expect([...statuses.values()].filter((s) => s === 503).length).toBeGreaterThan(0);
    await expectNothingLost(statuses, db, gateway);
    // Calls work again, and the console with them.
    expect(await authCodeOverGet(server.url, '+447911299001', '777001')).toBe(200);
    expect((await api('/api/calls?limit=1')).status).toBe(200);
  }, 90_000);

  it('says it is not ready while the network to the database hangs, and carries on after', async () => {
    proxy.stall();
    const noticed = await timeUntilReady(server.url, 503, 15_000);
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ database: 'down' });
    await proxy.heal();
    const recovered = await timeUntilReady(server.url, 200, 10_000);
    console.info(`PostgreSQL hung: /readyz 503 after ${noticed} ms, 200 again ${recovered} ms after`);
    expect(await authCodeOverGet(server.url, '+447911299002', '777002')).toBe(200);
    expectNoCrash(server);
  }, 60_000);
});

describe.skipIf(!TEST_DATABASE_URL)('starting without PostgreSQL', () => {
  it('starts, listens and answers 503, then connects, migrates and serves once the database is there', async () => {
    const database = await freshPostgres();
    const target = new URL(database.url);
    const proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const gateway = await startSmsGateway(5);
    await proxy.refuse();
    const started = Date.now();
    const server = await startServerProcess(
      { ...serverEnv(gateway), DATABASE_URL: proxy.url(database.url) },
      { until: 'listening' },
    );
    try {
      expect(await readyz(server.url)).toBe(503);
      const ready = await fetch(`${server.url}/readyz`);
      expect(await ready.json()).toMatchObject({
        status: 'unavailable',
        database: false,
        migrations: false,
        reasons: [expect.stringMatching(/^database: .*ECONNREFUSED/)],
      });
      expect(await (await fetch(`${server.url}/healthz`)).json()).toMatchObject({ database: 'down' });
      expect(await authCodeOverGet(server.url, '+447911299101', '123')).toBe(503);
      const res = await fetch(`${server.url}/AuthCodeSending.asmx`, soap('1.1', '4242'));
      expect(res.status).toBe(500);
      expect(await res.text()).toContain(UNAVAILABLE);
      // The login page is the console's: it is served; logging in needs the database.
      expect((await fetch(`${server.url}/login`)).status).toBe(200);
      await sleep(4000);
      await proxy.heal();
      const waited = await timeUntilReady(server.url, 200, 15_000);
      console.info(`started without PostgreSQL: ready ${waited} ms after it was back`);
      // Retried with a pause doubling up to 10 s: back within one pause.
      expect(waited).toBeLessThan(10_500);
      // The first admin is created once the database can be reached; calls go through.
      let api: Awaited<ReturnType<typeof consoleFetch>> | undefined;
      await waitUntil(
        async () => {
          api = await consoleFetch(server.url).catch(() => undefined);
          return api !== undefined;
        },
        { what: 'the first admin' },
      );
      if (!api) throw new Error('no login');
      expect((await api('/api/calls?limit=1')).status).toBe(200);
      expect(await authCodeOverGet(server.url, '+447911299102', '123456')).toBe(200);
      await waitUntil(() => gateway.sent.length === 1, { timeoutMs: 10_000 });
      // One warning at most every 10 s while it waited, as JSON lines, naming the cause.
      const waiting = server
        .output()
        .split('\n')
        .filter((l) => l.includes('the database cannot be reached yet'));
      expect(waiting.length).toBeGreaterThan(0);
      expect(waiting.length).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 10_000) + 1);
      // Saying what the callers above were answered.
      for (const line of waiting)
        expect(JSON.parse(line)).toMatchObject({
          level: 40,
          msg: expect.stringContaining(
            'calls are refused (SOAP: a 500 fault; HTTP GET/POST: 503; with Retry-After)',
          ),
        });
      expectNoCrash(server);
    } finally {
      await server.stop();
      await proxy.close();
      await gateway.close();
      await database.drop();
    }
  }, 60_000);

  it('stops at once, saying which, when the database named does not exist', async () => {
    const url = new URL(TEST_DATABASE_URL as string);
    url.pathname = '/sm_no_such_database';
    const gateway = await startSmsGateway(5);
    try {
      await expect(
        startServerProcess({ ...serverEnv(gateway), DATABASE_URL: url.toString() }, { timeoutMs: 10_000 }),
      ).rejects.toThrow(/The database in DATABASE_URL does not exist/);
    } finally {
      await gateway.close();
    }
  }, 30_000);
});

const cluster = privatePostgresAvailable();
describe.skipIf(!cluster.ok)(
  `a private PostgreSQL cluster stopped and started${cluster.ok ? '' : ` (skipped: ${cluster.why})`}`,
  () => {
    let pgCluster: PrivatePostgres;
    let gateway: SmsGateway;
    let server: ServerProcess;
    let db: pg.Pool;

    beforeAll(async () => {
      pgCluster = await startPrivatePostgres();
      gateway = await startSmsGateway(20);
      server = await startServerProcess({ ...serverEnv(gateway), DATABASE_URL: pgCluster.url });
    }, 60_000);

    afterAll(async () => {
      await server?.stop();
      await db?.end();
      await gateway?.close();
      await pgCluster?.destroy();
    });

    it('survives the database server stopping and starting under load, and loses nothing', async () => {
      const api = await consoleFetch(server.url);
      const load = startLoad(server.url, 100_000);
      await sleep(1500);
      await pgCluster.stop();
      const noticed = await timeUntilReady(server.url, 503, 10_000);
      await expectUnavailable(server.url, api);
      await sleep(2000);
      await pgCluster.start();
      const recovered = await timeUntilReady(server.url, 200, 10_000);
      await sleep(1500);
      const statuses = await load.stop();
      console.info(
        `PostgreSQL stopped: /readyz 503 after ${noticed} ms, 200 again ${recovered} ms after it started`,
      );
      expect(recovered).toBeLessThan(2000);
      expectNoCrash(server);
      db = new pg.Pool({ connectionString: pgCluster.url, max: 2 });
      await expectNothingLost(statuses, db, gateway);
    }, 90_000);

    it('notices a frozen database within 3 s, answers calls 503 at once meanwhile, and is ready again within 2 s of it answering', async () => {
      const load = startLoad(server.url, 200_000);
      await sleep(1500);
      const frozenAt = Date.now();
      await pgCluster.freeze();
      let thawed = false;
      try {
        const noticed = await timeUntilReady(server.url, 503, 10_000);
        // A call made now is refused at once, not held until the database answers.
        const asked = Date.now();
        expect(await authCodeOverGet(server.url, '+447911299101', '777101')).toBe(503);
        const refusedIn = Date.now() - asked;
        await sleep(Math.max(0, 8000 - (Date.now() - frozenAt)));
        const slowest = load.slowestSince(frozenAt - 1000);
        await pgCluster.thaw();
        thawed = true;
        const recovered = await timeUntilReady(server.url, 200, 10_000);
        // Once ready again it stays ready: no late failure of what waited on the frozen server.
        const after: number[] = [];
        for (let i = 0; i < 30; i++) {
          after.push(await readyz(server.url));
          await sleep(100);
        }
        const statuses = await load.stop();
        console.info(
          `PostgreSQL frozen: /readyz 503 after ${noticed} ms, a call refused in ${refusedIn} ms, the slowest call ${slowest} ms; ready ${recovered} ms after it answered`,
        );
        // 3 s by design (a check a second, 2 s without an answer); the rest is room for a busy machine.
        expect(noticed).toBeLessThan(4000);
        expect(refusedIn).toBeLessThan(1000);
        expect(slowest).toBeLessThan(4500);
        expect(recovered).toBeLessThan(2000);
        expect(after.filter((s) => s !== 200)).toEqual([]);
        expectNoCrash(server);
        // A frozen database is an outage ridden out: warnings, not errors.
        expect(server.output()).not.toMatch(/"level":50/);
        db ??= new pg.Pool({ connectionString: pgCluster.url, max: 2 });
        await expectNothingLost(statuses, db, gateway);
      } finally {
        if (!thawed) await pgCluster.thaw();
      }
    }, 90_000);
  },
);

/** Mounts a tmpfs of `mb` megabytes on a fresh folder, when this machine lets the test (root, mount). */
function mountTmpfs(mb: number): { dir: string; unmount(): void } | { why: string } {
  if (process.getuid?.() !== 0) return { why: 'mounting a tmpfs needs root' };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-messaging-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    return { why: `mount -t tmpfs failed: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}` };
  }
  return {
    dir,
    unmount() {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** Fills the disk under `dir` until `leaveBytes` are free (0: until a write fails). */
function fillDisk(file: string, leaveBytes: number): void {
  const chunk = Buffer.alloc(1024 * 1024, 1);
  const fd = fs.openSync(file, 'a');
  try {
    for (;;) {
      const { bavail, bsize } = fs.statfsSync(path.dirname(file));
      const free = bavail * bsize;
      if (free <= leaveBytes) return;
      fs.writeSync(fd, chunk, 0, Math.min(chunk.length, Math.max(4096, free - leaveBytes)));
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd);
  }
}

/** Whether a tmpfs can be mounted here: tried once, with the smallest one. */
function tmpfsAvailable(): { ok: true } | { ok: false; why: string } {
  const probe = mountTmpfs(1);
  if (!('dir' in probe)) return { ok: false, why: probe.why };
  probe.unmount();
  return { ok: true };
}

const disk = tmpfsAvailable();
describe.skipIf(!disk.ok)(`a full disk under SQLite${disk.ok ? '' : ` (skipped: ${disk.why})`}`, () => {
  it('refuses calls before the disk is full, keeps sending what it accepted, and takes calls again once space is freed', async () => {
    const mounted = mountTmpfs(48);
    if (!('dir' in mounted)) throw new Error(mounted.why);
    // Each send takes 600 ms (under PROVIDER_TIMEOUT_MS): the first ones are still under way
    // when the disk fills.
    const gateway = await startSmsGateway(600);
    const server = await startServerProcess({
      ...serverEnv(gateway),
      DATA_DIR: mounted.dir,
      MIN_FREE_DISK_MB: '16',
      REFUSE_FREE_DISK_MB: '8',
    });
    const filler = path.join(mounted.dir, 'filler');
    try {
      // Accepted, and still at the gateway when the disk fills.
      const accepted = await inParallel(10, 10, (i) =>
        authCodeOverGet(server.url, testPhone(250_000 + i), String(300_000 + i)),
      );
      expect(accepted).toEqual(accepted.map(() => 200));
      fillDisk(filler, 4 * 1024 * 1024);
      const noticed = await timeUntilReady(server.url, 503, 10_000);
      console.info(`disk nearly full: /readyz 503 after ${noticed} ms`);
      const ready = await (await fetch(`${server.url}/readyz`)).json();
      expect(ready).toMatchObject({ disk: 'nearly full', reasons: [expect.stringMatching(/^disk: /)] });
      expect(await authCodeOverGet(server.url, testPhone(250_100), '1')).toBe(503);
      const soapRes = await fetch(`${server.url}/AuthCodeSending.asmx`, soap('1.1', '4242'));
      expect(soapRes.status).toBe(500);
      expect(await soapRes.text()).toContain(UNAVAILABLE);
      expect(await (await fetch(`${server.url}/healthz`)).json()).toMatchObject({
        status: 'ok',
        disk: 'nearly full',
      });
      // The reserve records what was accepted: each code sent once, and settled.
      await waitUntil(() => gateway.sent.length === 10, { timeoutMs: 20_000, what: 'the accepted codes' });
      // Now full to the last byte, past every lease (8 s): still alive, still nothing twice.
      fillDisk(filler, 0);
      await sleep(9000);
      expectNoCrash(server);
      fs.rmSync(filler);
      const recovered = await timeUntilReady(server.url, 200, 15_000);
      console.info(`disk freed: /readyz 200 after ${recovered} ms`);
      expect(await authCodeOverGet(server.url, testPhone(250_200), '300200')).toBe(200);
      await waitUntil(() => gateway.sent.length === 11, { timeoutMs: 20_000, what: 'the new code' });
      expect([...gateway.requestsByKey.values()].filter((n) => n !== 1)).toEqual([]);
      const api = await consoleFetch(server.url);
      const deliveries = (await (await api('/api/deliveries?limit=50')).json()) as {
        items: { status: string }[];
      };
      expect(deliveries.items.map((d) => d.status)).toEqual(deliveries.items.map(() => 'sent'));
      expectNoCrash(server);
    } finally {
      await server.stop();
      await gateway.close();
      mounted.unmount();
    }
  }, 90_000);

  it('with every threshold off, a disk filled within a second refuses calls from the first failed write, and takes them again once freed', async () => {
    const mounted = mountTmpfs(32);
    if (!('dir' in mounted)) throw new Error(mounted.why);
    const gateway = await startSmsGateway(0);
    const server = await startServerProcess({
      ...serverEnv(gateway),
      DATA_DIR: mounted.dir,
      MIN_FREE_DISK_MB: '0',
      REFUSE_FREE_DISK_MB: '0',
    });
    const filler = path.join(mounted.dir, 'filler');
    try {
      expect(await authCodeOverGet(server.url, testPhone(260_000), '260000')).toBe(200);
      // A little room left, filled by bulky calls (each records a 60 kB body) within a second.
      fillDisk(filler, 1024 * 1024);
      const bulky = (i: number) =>
        fetch(`${server.url}/AuthCodeSending.asmx/AuthCode`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `code=${260_000 + i}&phone=${encodeURIComponent(testPhone(260_000 + i))}&note=${'x'.repeat(60_000)}`,
        }).then((r) => r.status);
      const statuses = await inParallel(120, 8, (i) => bulky(i + 1));
      const refused = statuses.filter((s) => s === 503).length;
      expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
      expect(refused).toBeGreaterThan(0);
      // The first failed write turned readiness: no threshold had to be crossed.
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ disk: 'full', reasons: ['disk: full (a write failed)'] });
      expect(await (await fetch(`${server.url}/healthz`)).json()).toMatchObject({ disk: 'full' });
      expect(await authCodeOverGet(server.url, testPhone(260_500), '260500')).toBe(503);
      fs.rmSync(filler);
      const recovered = await timeUntilReady(server.url, 200, 10_000);
      console.info(
        `disk filled in a second: ${refused} of 120 calls refused; /readyz 200 ${recovered} ms after it was freed`,
      );
      expect(recovered).toBeLessThan(2500);
      expect(await authCodeOverGet(server.url, testPhone(260_600), '260600')).toBe(200);
      expectNoCrash(server);
    } finally {
      await server.stop();
      await gateway.close();
      mounted.unmount();
    }
  }, 60_000);
});
