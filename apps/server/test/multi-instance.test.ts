import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, TEST_CODE_KEY, waitUntil } from './helpers.js';
import { type FreshDatabase, freshPostgres, TEST_DATABASE_URL } from './pg.js';
import {
  authCodeOverGet,
  inParallel,
  type ServerProcess,
  startServerProcess,
  testPhone,
} from './server-process.js';
import { gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

/**
 * Several instances on one PostgreSQL database, as real processes (dist/server.js, built by the
 * global setup) behind nothing but their own ports, sending SMS through a fake gateway that is a
 * real HTTP server and, as a real gateway with idempotency keys does, sends a key's message once.
 */

/** Waits until `check` holds, looking every 200 ms. */
const until = (what: string, check: () => Promise<boolean> | boolean, timeoutMs: number) =>
  waitUntil(check, { what, timeoutMs, intervalMs: 200 });

describe.skipIf(!TEST_DATABASE_URL)('several instances on one PostgreSQL database', () => {
  let database: FreshDatabase;
  let db: pg.Pool;
  let gateway: SmsGateway;
  let a: ServerProcess;
  let b: ServerProcess;
  const env = () => ({
    DATABASE_URL: database.url,
    CODE_ENCRYPTION_KEY: TEST_CODE_KEY,
    DATABASE_POOL_SIZE: '8',
    ...gatewayEnv(gateway),
    SMS_CONCURRENCY: '16',
    DISPATCH_POLL_MS: '200',
    // PROVIDER_TIMEOUT_MS as by default (10 s): leases of 35 s. A killed instance's claims are
    // taken over once it has been silent for 3 s, long before its leases run out.
    AUTHCODE_LIMIT_PER_PHONE: '5/15m',
    AUTHCODE_LIMIT_PER_IP: 'off',
    AUTHCODE_LIMIT_PER_RANGE: 'off',
    ASMX_LIMIT_PER_IP: 'off',
  });

  beforeAll(async () => {
    database = await freshPostgres();
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    gateway = await startSmsGateway(5);
    // One first, so that the second finds the schema migrated; both then run concurrently.
    a = await startServerProcess(env());
    b = await startServerProcess(env());
  }, 90_000);

  afterAll(async () => {
    for (const instance of [a, b]) {
      if (instance && instance.child.exitCode === null) {
        instance.child.kill('SIGTERM');
        await instance.exited;
      }
    }
    await gateway?.close();
    await db?.end();
    await database?.drop();
  });

  const count = async (sql: string, params: unknown[] = []) =>
    Number((await db.query<{ n: string }>(sql, params)).rows[0]?.n ?? 0);

  it("shows a call made on one instance in the other's live tail", async () => {
    const login = await fetch(`${b.url}/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: b.url },
      body: JSON.stringify(TEST_ADMIN),
    });
    expect(login.status).toBe(200);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const controller = new AbortController();
    const stream = await fetch(`${b.url}/api/calls/stream?operation=AuthCode`, {
      headers: { cookie },
      signal: controller.signal,
    });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const seen = (async () => {
      while (!text.includes('+447911123999')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
    })();
    expect(await authCodeOverGet(a.url, '+447911123999', '424242')).toBe(200);
    await Promise.race([seen, new Promise((r) => setTimeout(r, 10_000))]);
    controller.abort();
    expect(text).toMatch(/event: call\nid: \d+\ndata: .*"\+447911123999"/);
    // The code itself is never in the tail.
    expect(text).not.toContain('424242');
  }, 30_000);

  it('accepts exactly the per-phone limit when 200 calls for one phone come at once to both', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        authCodeOverGet(i % 2 ? a.url : b.url, '+447911123888', String(100000 + i)),
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 0)).toHaveLength(0);
    await until(
      'the five codes to be sent',
      () => gateway.sent.filter((m) => m.to === '+447911123888').length === 5,
      20_000,
    );
    expect(await count("SELECT count(*) AS n FROM deliveries WHERE recipient = '+447911123888'")).toBe(5);
  }, 60_000);

  it('sends 5 000 AuthCodes spread over both instances exactly once each', async () => {
    const before = gateway.sent.length;
    const statuses = await inParallel(5000, 64, (i) =>
      authCodeOverGet(i % 2 ? a.url : b.url, testPhone(i), String(200000 + i)),
    );
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    await until('every code to reach the gateway', () => gateway.sent.length - before >= 5000, 120_000);
    // Settled: nothing left to send, nothing sent twice.
    await until(
      'the outbox to settle',
      async () => (await count("SELECT count(*) AS n FROM deliveries WHERE status <> 'sent'")) === 0,
      30_000,
    );
    const batch = gateway.sent.slice(before);
    expect(batch).toHaveLength(5000);
    const codes = new Set(batch.map((m) => m.text));
    expect(codes.size).toBe(5000);
    for (let i = 0; i < 5000; i += 997) {
      expect(batch.filter((m) => m.to === testPhone(i)).map((m) => m.text)).toEqual([
        `Your code is ${200000 + i}`,
      ]);
    }
    expect(a.output()).not.toMatch(/"level":(50|60)/);
    expect(b.output()).not.toMatch(/"level":(50|60)/);
  }, 240_000);

  it('loses nothing when one instance is killed mid-load: the other resends its codes within seconds', async () => {
    // Slow sends, so that the killed instance surely has claims under way when it dies.
    const slowGateway = gateway;
    slowGateway.delayMs = 300;
    const before = slowGateway.sent.length;
    const ok: number[] = [];
    let killed = false;
    let killedAt = 0;
    await inParallel(1500, 48, async (i) => {
      const target = i % 2 && !killed ? a : b;
      const status = await authCodeOverGet(target.url, testPhone(20_000 + i), String(300000 + i));
      if (status === 200) ok.push(i);
      if (i === 600 && !killed) {
        killed = true;
        killedAt = Date.now();
        a.child.kill('SIGKILL');
      }
    });
    expect(await a.exited).toBeNull();
    expect(ok.length).toBeGreaterThan(1000);
    // Every call answered 200 is in history, with its SMS.
    const recorded = await db.query<{ params: string }>(
      "SELECT params FROM calls WHERE operation = 'AuthCode' AND outcome = 'ok' AND params LIKE '%+44791102%'",
    );
    const recordedPhones = new Set(recorded.rows.map((r) => JSON.parse(r.params).phone as string));
    for (const i of ok) expect(recordedPhones.has(testPhone(20_000 + i))).toBe(true);
    // Each reaches the phone exactly once (a resend after the kill carries the same key).
    await until(
      'every accepted code to be sent',
      () => {
        const sentTo = new Set(slowGateway.sent.slice(before).map((m) => m.to));
        return ok.every((i) => sentTo.has(testPhone(20_000 + i)));
      },
      60_000,
    );
    await until(
      'the outbox to settle',
      async () => (await count("SELECT count(*) AS n FROM deliveries WHERE status <> 'sent'")) === 0,
      60_000,
    );
    // The killed instance's claims were taken over: their attempts read `interrupted`, and the
    // other sent them again once the killed one had been silent for 3 s (its heartbeat stopped),
    // not when their 35 s leases ran out.
    expect(
      await count("SELECT count(*) AS n FROM delivery_attempts WHERE outcome = 'interrupted'"),
    ).toBeGreaterThan(0);
    const resent = await db.query<{ released: string; last: string }>(
      `SELECT max(cut.finished_at) AS released, max(again.started_at) AS last FROM delivery_attempts cut
         JOIN delivery_attempts again ON again.delivery_id = cut.delivery_id AND again.id > cut.id
       WHERE cut.outcome = 'interrupted'`,
    );
    const releasedAfterMs = Number(resent.rows[0]?.released) - killedAt;
    const resentAfterMs = Number(resent.rows[0]?.last) - killedAt;
    console.info(
      `killed instance's codes released ${releasedAfterMs} ms and resent ${resentAfterMs} ms after its death (leases: 35 s)`,
    );
    expect(resentAfterMs).toBeLessThan(20_000);
    const sent = slowGateway.sent.slice(before);
    const perPhone = new Map<string, number>();
    for (const m of sent) perPhone.set(m.to, (perPhone.get(m.to) ?? 0) + 1);
    expect([...perPhone.values()].every((n) => n === 1)).toBe(true);
    expect(sent.length).toBe(recordedPhones.size);
  }, 180_000);

  it('hands back what it holds at a clean stop, and says it is gone', async () => {
    // b is the one left; a third starts, takes a share of the work, and is stopped cleanly.
    const c = await startServerProcess(env());
    const announced = () => count('SELECT count(*) AS n FROM instances');
    const before = await announced();
    const statuses = await inParallel(100, 16, (i) =>
      authCodeOverGet(i % 2 ? c.url : b.url, testPhone(40_000 + i), String(400000 + i)),
    );
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    await c.stop();
    expect(await c.exited).toBe(0);
    // Nothing is left `sending` for an instance that is gone, and its announcement is gone too.
    expect(
      await count(
        "SELECT count(*) AS n FROM deliveries d WHERE status = 'sending' AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = d.leased_by)",
      ),
    ).toBe(0);
    expect(await announced()).toBe(before - 1);
    await until(
      'the outbox to settle',
      async () => (await count("SELECT count(*) AS n FROM deliveries WHERE status <> 'sent'")) === 0,
      30_000,
    );
  }, 60_000);
});

describe.skipIf(!TEST_DATABASE_URL)('a takeover towards a gateway that serves a few requests at once', () => {
  let database: FreshDatabase;
  let db: pg.Pool;
  let gateway: SmsGateway;
  let a: ServerProcess;
  let b: ServerProcess;
  const env = () => ({
    DATABASE_URL: database.url,
    CODE_ENCRYPTION_KEY: TEST_CODE_KEY,
    DATABASE_POOL_SIZE: '8',
    ...gatewayEnv(gateway),
    // As by default: up to 200 SMS under way per instance, far more than this gateway serves.
    PROVIDER_TIMEOUT_MS: '1000',
    DISPATCH_POLL_MS: '200',
    AUTHCODE_LIMIT_PER_PHONE: 'off',
    AUTHCODE_LIMIT_PER_IP: 'off',
    AUTHCODE_LIMIT_PER_RANGE: 'off',
    ASMX_LIMIT_PER_IP: 'off',
  });

  beforeAll(async () => {
    database = await freshPostgres();
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    // Six requests at a time, 50 ms each: 120 SMS a second, the rest waiting their turn.
    gateway = await startSmsGateway(50);
    gateway.atOnce = 6;
    a = await startServerProcess(env());
    b = await startServerProcess(env());
  }, 90_000);

  afterAll(async () => {
    for (const instance of [a, b]) {
      if (instance && instance.child.exitCode === null) {
        instance.child.kill('SIGTERM');
        await instance.exited;
      }
    }
    await gateway?.close();
    await db?.end();
    await database?.drop();
  });

  it("sends a killed instance's codes within 10 s, released in a ramp that opens no circuit, none sent more than twice", async () => {
    // A queues codes faster than the gateway takes them, and dies with a burst of them under way.
    const accepted: string[] = [];
    await inParallel(300, 30, async (i) => {
      const phone = testPhone(50_000 + i);
      if ((await authCodeOverGet(a.url, phone, String(500000 + i))) === 200) accepted.push(phone);
    });
    a.child.kill('SIGKILL');
    const killedAt = Date.now();
    expect(await a.exited).toBeNull();
    expect(accepted.length).toBe(300);
    await waitUntil(() => accepted.every((phone) => gateway.sentAt.has(phone)), {
      what: 'every code of the killed instance at the gateway',
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    const lastAfterMs = Math.max(...accepted.map((phone) => gateway.sentAt.get(phone) as number)) - killedAt;
    const requests = [...gateway.requestsByKey.values()];
    console.info(
      `takeover: the last code at the gateway ${lastAfterMs} ms after the kill; at most ${Math.max(...requests)} requests for one key, ${gateway.mostWaiting} waiting at the gateway at most`,
    );
    expect(lastAfterMs).toBeLessThan(10_000);
    // Once by the killed instance, once by the one that took over, never a third time.
    expect(requests.filter((n) => n > 2)).toEqual([]);
    // The burst did not open the primary's circuit on the instance that took over.
    expect(b.output()).not.toMatch(/circuit open/);
  }, 120_000);
});
