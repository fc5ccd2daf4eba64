import fs from 'node:fs';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from './fault-proxy.js';
import { waitUntil } from './helpers.js';
import { TEST_DATABASE_URL } from './pg.js';
import { type PrivatePostgres, privatePostgresAvailable, startPrivatePostgres } from './private-postgres.js';

/** The helpers of the fault tests do what they say, seen from a real pg client. */

/** A client whose errors are recorded, not thrown: a severed idle client emits `error`. */
function client(url: string): pg.Client & { errors: Error[] } {
  const c = Object.assign(new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 }), {
    errors: [] as Error[],
  });
  c.on('error', (err) => c.errors.push(err));
  return c;
}

/** Ends `c` without waiting on a dead connection. */
async function end(c: pg.Client): Promise<void> {
  await Promise.race([c.end().catch(() => {}), new Promise((r) => setTimeout(r, 500))]);
}

/** `p` settled within `ms`, or 'pending'. */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'pending'> {
  return Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms))]);
}

/** Connects and answers 1, or throws why not. */
async function selectOne(url: string): Promise<number> {
  const c = client(url);
  try {
    await c.connect();
    return (await c.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one ?? 0;
  } finally {
    await end(c);
  }
}

/** Waits until `check` holds (helpers.ts's waitUntil, looking every 10 ms). */
const until = (what: string, check: () => boolean, timeoutMs = 2_000) =>
  waitUntil(check, { what, timeoutMs, intervalMs: 10 });

describe.skipIf(!TEST_DATABASE_URL)('fault proxy', () => {
  const target = new URL(TEST_DATABASE_URL ?? 'postgres://localhost');
  let proxy: FaultProxy;
  let url: string;
  const clients: pg.Client[] = [];
  const open = (): ReturnType<typeof client> => {
    const c = client(url);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 5432) });
    url = proxy.url(TEST_DATABASE_URL as string);
  });

  afterEach(async () => {
    await proxy.heal();
    await Promise.all(clients.splice(0).map(end));
  });

  afterAll(async () => {
    await proxy?.close();
  });

  it('forwards: a query answers through the proxy', async () => {
    expect(new URL(url).port).toBe(String(proxy.port));
    const c = open();
    await c.connect();
    expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect(proxy.connections).toBe(1);
  });

  it('sever: open connections fail at once, new ones work', async () => {
    const c = open();
    await c.connect();
    await c.query('SELECT 1');
    const slow = c.query('SELECT pg_sleep(5)');
    proxy.sever();
    expect(proxy.connections).toBe(0);
    await expect(slow).rejects.toThrow();
    await until('the client to see the error', () => c.errors.length > 0);
    await expect(c.query('SELECT 1')).rejects.toThrow();
    expect(await selectOne(url)).toBe(1);
  });

  it('refuse: new connections get ECONNREFUSED, open ones are severed; heal listens on the same port', async () => {
    const c = open();
    await c.connect();
    const port = proxy.port;
    await proxy.refuse();
    await until('the open client to see the error', () => c.errors.length > 0);
    await expect(selectOne(url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await proxy.heal();
    expect(proxy.port).toBe(port);
    expect(await selectOne(url)).toBe(1);
  });

  it('stall: nothing answers, open or new; heal lets the held query through and new connections work', async () => {
    const c = open();
    await c.connect();
    proxy.stall();
    const query = c.query<{ one: number }>('SELECT 1 AS one');
    const late = open();
    const lateConnected = late.connect();
    expect(await within(Promise.race([query, lateConnected]), 500)).toBe('pending');
    expect(proxy.connections).toBe(2);
    await proxy.heal();
    // Held, not dropped: the query and the connection made during the stall go through.
    expect((await query).rows).toEqual([{ one: 1 }]);
    await lateConnected;
    expect((await late.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    expect(await selectOne(url)).toBe(1);
    expect(c.errors).toEqual([]);
  });
});

const available = privatePostgresAvailable();

describe.skipIf(!available.ok)(
  `private PostgreSQL cluster${available.ok ? '' : ` (skipped: ${available.why})`}`,
  () => {
    let cluster: PrivatePostgres;

    beforeAll(async () => {
      cluster = await startPrivatePostgres();
    }, 60_000);

    afterAll(async () => {
      await cluster?.destroy();
    });

    it('stops and starts on the same port with the same data, and destroy removes its folder', async () => {
      expect(cluster.url).toBe(`postgres://postgres@127.0.0.1:${cluster.port}/test`);
      const c = client(cluster.url);
      await c.connect();
      await c.query('CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)');
      await cluster.stop();
      expect(cluster.running).toBe(false);
      // The stop ended the session it had open.
      await until('the open client to see the stop', () => c.errors.length > 0);
      await end(c);
      await expect(selectOne(cluster.url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });

      await cluster.start();
      const again = client(cluster.url);
      await again.connect();
      try {
        expect((await again.query('SELECT n FROM kept')).rows).toEqual([{ n: 42 }]);
      } finally {
        await end(again);
      }

      await cluster.destroy();
      expect(fs.existsSync(cluster.dir)).toBe(false);
      await expect(selectOne(cluster.url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    }, 30_000);
  },
);
