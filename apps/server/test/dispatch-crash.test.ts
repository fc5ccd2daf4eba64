import http from 'node:http';
import type net from 'node:net';
import type { DeliveryDetail, DeliveryList } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleFetch, tempDataDir } from './helpers.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

async function until<T>(
  check: () => Promise<T | undefined> | T | undefined,
  what: string,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch {}
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a dispatcher killed mid-batch and restarted', () => {
  const data = tempDataDir();
  let hook: http.Server;
  let hookUrl = '';
  /** Phase 1 holds every request unanswered; phase 2 accepts each idempotency key once, as a provider would. */
  let holding = true;
  const held: string[] = [];
  const accepted = new Map<string, number>();
  const duplicates: string[] = [];

  beforeAll(async () => {
    hook = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const key = String(req.headers['idempotency-key']);
        if (holding) {
          held.push(key);
          return; // never answered: the server dies while waiting
        }
        if (accepted.has(key)) duplicates.push(key);
        accepted.set(key, (accepted.get(key) ?? 0) + 1);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    hookUrl = `http://127.0.0.1:${(hook.address() as net.AddressInfo).port}/push`;
  });
  afterAll(async () => {
    hook.closeAllConnections();
    await new Promise((r) => hook.close(r));
    data.remove();
  });

  /** The server on the test's one data folder, so that the second start finds what the first left. */
  const start = (): Promise<ServerProcess> =>
    startServerProcess(
      {
        DATA_DIR: data.dir,
        PUSH_PROVIDER: 'webhook',
        PUSH_WEBHOOK_URL: hookUrl,
        PUSH_WEBHOOK_SECRET: 'a-shared-secret-for-the-test',
        DISPATCH_CONCURRENCY: '2',
        PROVIDER_TIMEOUT_MS: '60000',
        DISPATCH_POLL_MS: '50',
      },
      { until: 'listening' },
    );

  it('loses nothing and sends nothing twice', async () => {
    const first = await start();
    const firstApi = await consoleFetch(first.url);
    const school = await firstApi('/api/schools', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Crash School', baseUrl: 'https://crash.example.org', topicKey: 'crash' }),
    });
    expect(school.status).toBe(201);
    for (let i = 1; i <= 5; i++) {
      const res = await fetch(
        `${first.url}/NotificationNotes.asmx/SendNotificationType?id=${i}&baseUrlSchool=https://crash.example.org&TypeNotfication=news`,
      );
      expect(res.status).toBe(200);
    }
    // Two attempts are under way (the concurrency), the provider has them, and the server dies.
    await until(() => held.length === 2 || undefined, 'two attempts in flight');
    first.child.kill('SIGKILL');
    await first.exited;
    holding = false;

    const second = await start();
    try {
      const api = await consoleFetch(second.url);
      const deliveries = await until(async () => {
        const list = (await (await api('/api/deliveries?limit=50')).json()) as DeliveryList;
        return list.counts.sent === 5 ? list.items : undefined;
      }, 'all five sent after the restart');
      expect(accepted.size).toBe(5);
      expect(duplicates).toEqual([]);
      // The interrupted ones went again with the same idempotency key, visibly.
      for (const key of held) expect(accepted.has(key)).toBe(true);
      const outcomes: string[][] = [];
      for (const d of deliveries) {
        const detail = (await (await api(`/api/deliveries/${d.id}`)).json()) as DeliveryDetail;
        outcomes.push(detail.attemptLog.map((a) => String(a.outcome)));
      }
      expect(outcomes.filter((o) => o.join() === 'interrupted,sent')).toHaveLength(2);
      expect(outcomes.filter((o) => o.join() === 'sent')).toHaveLength(3);
    } finally {
      await second.stop();
    }
  });
});
