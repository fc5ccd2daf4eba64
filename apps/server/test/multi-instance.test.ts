import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, tempDataDir } from './helpers.js';
import { type FreshDatabase, freshPostgres, TEST_DATABASE_URL } from './pg.js';
import { freePort, SERVER_ENTRY } from './server-process.js';

/**
 * Several instances on one PostgreSQL database, as real processes (dist/server.js, built by the
 * global setup) behind nothing but their own ports, sending SMS through a fake gateway that is a
 * real HTTP server and, as a real gateway with idempotency keys does, sends a key's message once.
 */

/** The SMS gateway: what it was asked, and what it actually sent (once per idempotency key). */
interface Gateway {
  readonly url: string;
  /** Messages sent to phones, in order: one per idempotency key. */
  readonly sent: { key: string; to: string; text: string }[];
  /** Requests received, repeats of a key included. */
  requests: number;
  /** How long each send takes. */
  delayMs: number;
  close(): Promise<void>;
}

async function startGateway(delayMs: number): Promise<Gateway> {
  const byKey = new Map<string, string>();
  const gateway: Gateway = {
    url: '',
    sent: [],
    requests: 0,
    delayMs,
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      gateway.requests++;
      const form = new URLSearchParams(body);
      const key = req.headers['idempotency-key'];
      const to = form.get('to');
      const text = form.get('text');
      if (req.method !== 'POST' || req.url !== '/send' || typeof key !== 'string' || !to || !text) {
        res.writeHead(400).end('bad request');
        return;
      }
      setTimeout(() => {
        let id = byKey.get(key);
        if (!id) {
          id = `msg-${byKey.size + 1}`;
          byKey.set(key, id);
          gateway.sent.push({ key, to, text });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id }));
      }, gateway.delayMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return Object.assign(gateway, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

interface Instance {
  readonly url: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
}

async function startInstance(env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  const data = tempDataDir();
  let output = '';
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: data.dir,
      LOG_LEVEL: 'warn',
      ADMIN_USERNAME: TEST_ADMIN.username,
      ADMIN_PASSWORD: TEST_ADMIN.password,
      ...env,
    },
    stdio: 'pipe',
  });
  child.stdout?.on('data', (c) => {
    output += c;
  });
  child.stderr?.on('data', (c) => {
    output += c;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      data.remove();
      resolve(code);
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {}
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`instance did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, child, exited, output: () => output };
}

/** An AuthCode over HTTP GET, as an old client sends it; resolves with the status (0: no answer). */
async function authCode(base: string, phone: string, code: string): Promise<number> {
  try {
    const res = await fetch(
      `${base}/AuthCodeSending.asmx/AuthCode?code=${code}&phone=${encodeURIComponent(phone)}`,
    );
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Runs `tasks` with at most `width` at once. */
async function pool<T>(count: number, width: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const phone = (n: number) => `+447911${String(n).padStart(6, '0')}`;

describe.skipIf(!TEST_DATABASE_URL)('several instances on one PostgreSQL database', () => {
  let database: FreshDatabase;
  let db: pg.Pool;
  let gateway: Gateway;
  let a: Instance;
  let b: Instance;
  const env = () => ({
    DATABASE_URL: database.url,
    DATABASE_POOL_SIZE: '8',
    SMS_PROVIDER: 'http',
    SMS_HTTP_URL: `${gateway.url}/send`,
    SMS_HTTP_BODY: 'to={to}&text={text}',
    SMS_TEMPLATE: 'Your code is {code}',
    SMS_CONCURRENCY: '16',
    DISPATCH_POLL_MS: '200',
    // Leases of 3 × 1 s + 5 s: an instance killed mid-send has its claims taken over after 8 s.
    PROVIDER_TIMEOUT_MS: '1000',
    AUTHCODE_LIMIT_PER_PHONE: '5/15m',
    AUTHCODE_LIMIT_PER_IP: 'off',
    ASMX_LIMIT_PER_IP: 'off',
  });

  beforeAll(async () => {
    database = await freshPostgres();
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    gateway = await startGateway(5);
    // One first, so that the second finds the schema migrated; both then run concurrently.
    a = await startInstance(env());
    b = await startInstance(env());
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
    expect(await authCode(a.url, '+447911123999', '424242')).toBe(200);
    await Promise.race([seen, new Promise((r) => setTimeout(r, 10_000))]);
    controller.abort();
    expect(text).toMatch(/event: call\nid: \d+\ndata: .*"\+447911123999"/);
    // The code itself is never in the tail.
    expect(text).not.toContain('424242');
  }, 30_000);

  it('accepts exactly the per-phone limit when 200 calls for one phone come at once to both', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        authCode(i % 2 ? a.url : b.url, '+447911123888', String(100000 + i)),
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
    const statuses = await pool(5000, 64, (i) =>
      authCode(i % 2 ? a.url : b.url, phone(i), String(200000 + i)),
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
      expect(batch.filter((m) => m.to === phone(i)).map((m) => m.text)).toEqual([
        `Your code is ${200000 + i}`,
      ]);
    }
    expect(a.output()).not.toMatch(/"level":(50|60)/);
    expect(b.output()).not.toMatch(/"level":(50|60)/);
  }, 240_000);

  it('loses nothing when one instance is killed mid-load: the other takes its leases over', async () => {
    // Slow sends, so that the killed instance surely has claims under way when it dies.
    const slowGateway = gateway;
    slowGateway.delayMs = 300;
    const before = slowGateway.sent.length;
    const ok: number[] = [];
    let killed = false;
    await pool(1500, 48, async (i) => {
      const target = i % 2 && !killed ? a : b;
      const status = await authCode(target.url, phone(20_000 + i), String(300000 + i));
      if (status === 200) ok.push(i);
      if (i === 600 && !killed) {
        killed = true;
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
    for (const i of ok) expect(recordedPhones.has(phone(20_000 + i))).toBe(true);
    // Each reaches the phone exactly once (a resend after the kill carries the same key).
    await until(
      'every accepted code to be sent',
      () => {
        const sentTo = new Set(slowGateway.sent.slice(before).map((m) => m.to));
        return ok.every((i) => sentTo.has(phone(20_000 + i)));
      },
      60_000,
    );
    await until(
      'the outbox to settle',
      async () => (await count("SELECT count(*) AS n FROM deliveries WHERE status <> 'sent'")) === 0,
      60_000,
    );
    // The killed instance's claims were taken over: their attempts read `interrupted`.
    expect(
      await count("SELECT count(*) AS n FROM delivery_attempts WHERE outcome = 'interrupted'"),
    ).toBeGreaterThan(0);
    const sent = slowGateway.sent.slice(before);
    const perPhone = new Map<string, number>();
    for (const m of sent) perPhone.set(m.to, (perPhone.get(m.to) ?? 0) + 1);
    expect([...perPhone.values()].every((n) => n === 1)).toBe(true);
    expect(sent.length).toBe(recordedPhones.size);
  }, 180_000);
});
