import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOutboxSql } from '../src/outbox/sql.js';
import { bucketCounts } from '../src/stats/call-stats.js';
import { createDeliveryRollups } from '../src/stats/delivery-rollups.js';
import type { NewCall, Store } from '../src/store/index.js';
import { sms, testSealer, waitUntil } from './helpers.js';
import { DIALECTS, openTestStoresOn, type TestStores } from './pg.js';

/**
 * The store's contract, run on every database it supports: always SQLite, and PostgreSQL when
 * TEST_DATABASE_URL is set (each test on a database of its own). What a repository answers must
 * not depend on which database is behind it.
 */

const T0 = Date.UTC(2026, 10, 2, 9, 0, 0);

function call(overrides: Partial<NewCall> = {}): NewCall {
  return {
    at: T0,
    group_name: 'AuthCodeSending',
    operation: 'AuthCode',
    binding: 'soap11',
    caller_ip: '10.0.0.1',
    user_agent: 'test',
    params: JSON.stringify({ phone: '+447700900123', code: '****' }),
    outcome: 'ok',
    status: 200,
    error: null,
    duration_ms: 1.25,
    request: 'POST /AuthCodeSending.asmx HTTP/1.1\r\n\r\n<soap:Envelope/>',
    request_bytes: 40,
    response: 'HTTP/1.1 200 OK\r\n\r\n<ok/>',
    response_bytes: 20,
    note: null,
    request_id: 'req-1',
    ...overrides,
  };
}

describe.each(DIALECTS)('the store on %s', (dialect) => {
  let opened: TestStores;

  beforeEach(async () => {
    opened = await openTestStoresOn(dialect);
  });

  afterEach(() => opened.close());

  it('is ready once migrated, and says which database it is', async () => {
    expect(opened.store.dialect).toBe(dialect);
    expect(opened.store.readiness()).toMatchObject({ database: true, migrations: true });
    // Reopening runs no migration twice; a database a newer release has migrated further still
    // opens (a rolling upgrade, a rollback): its migrations only add.
    await opened.store.db
      .insertInto('kysely_migration' as never)
      .values({ name: '9999_from_a_newer_release', timestamp: new Date().toISOString() } as never)
      .execute();
    if (dialect === 'postgres') {
      const second = (await opened.another()).store;
      expect(second.readiness()).toMatchObject({ database: true, migrations: true });
    } else {
      await opened.store.close();
      const again = (await opened.another()).store;
      expect(again.readiness()).toMatchObject({ database: true, migrations: true });
    }
  });

  it('records concurrent calls with their deliveries in one commit, and reads numbers back as numbers', async () => {
    const { recorder, history, outbox } = opened;
    const ids = await Promise.all(
      Array.from({ length: 50 }, (_, i) => recorder.record(call({ at: T0 + i }), i % 2 ? [sms()] : [])),
    );
    expect(new Set(ids).size).toBe(50);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    const row = await history.findById(ids[7] as number);
    expect(row).toMatchObject({ at: T0 + 7, status: 200, duration_ms: 1.25, request_id: 'req-1' });
    expect(typeof row?.at).toBe('number');
    expect(typeof row?.id).toBe('number');
    expect(await history.count()).toBe(50);
    const deliveries = await outbox.deliveries.search({}, { limit: 100 });
    expect(deliveries).toHaveLength(25);
    expect(deliveries.every((d) => typeof d.created_at === 'number' && d.status === 'pending')).toBe(true);
    const { db, dialect: on } = opened.store;
    expect((await createDeliveryRollups(db, on).stateCounts()).pending).toBe(25);
  });

  it('records a request holding NUL (PostgreSQL keeps U+FFFD in its place)', async () => {
    const { recorder, history } = opened;
    const id = await recorder.record(
      call({ request: 'POST / HTTP/1.1\r\n\r\n<a>\u0000</a>', params: '{"x":"\u0000"}' }),
    );
    const row = await history.findById(id);
    const kept = dialect === 'postgres' ? '\uFFFD' : '\u0000';
    expect(row?.request).toBe(`POST / HTTP/1.1\r\n\r\n<a>${kept}</a>`);
    expect(row?.params).toBe(`{"x":"${kept}"}`);
  });

  // SQLite keeps a lone surrogate's three bytes of CESU-8 (read back as three U+FFFD).
  it.runIf(dialect === 'postgres')(
    'records a lone surrogate as U+FFFD, and the text of an escape as it was written',
    async () => {
      const { recorder, history } = opened;
      // Half of an emoji, whole emoji, and backslashes written before "u0000" and "ud800".
      const text = '<a>\ud83d</a><b>\ud83d\ude00</b><c>\\u0000 \\\\u0000 \\ud800 "\\"</c>';
      const [id, other] = await Promise.all([
        recorder.record(call({ request: text, user_agent: '\udc00x' })),
        recorder.record(call()),
      ]);
      const row = await history.findById(id);
      expect(row?.request).toBe('<a>\uFFFD</a><b>\ud83d\ude00</b><c>\\u0000 \\\\u0000 \\ud800 "\\"</c>');
      expect(row?.user_agent).toBe('\uFFFDx');
      expect((await history.findById(other))?.request).toBe(call().request);
    },
  );

  it('tells the live tail of each commit', async () => {
    const { recorder, history } = opened;
    const seen: number[] = [];
    history.live.events.on('recorded', (rows) => seen.push(...rows.map((r) => r.id)));
    const ids = await Promise.all([recorder.record(call()), recorder.record(call())]);
    expect(seen).toEqual(ids);
  });

  it('lists newest first with keyset pages under each filter, and counts by bucket', async () => {
    const { store, recorder, history } = opened;
    for (let i = 0; i < 30; i++) {
      await recorder.record(
        call({
          at: T0 + Math.floor(i / 2) * 60_000,
          binding: i % 3 === 0 ? 'http-get' : 'soap12',
          outcome: i % 5 === 0 ? 'client-error' : 'ok',
          caller_ip: i % 2 ? '10.0.0.2' : '10.0.0.1',
        }),
      );
    }
    const all: number[] = [];
    let after: { at: number; id: number } | undefined;
    for (;;) {
      const page = await history.search({ binding: 'soap12' }, { limit: 7, after });
      all.push(...page.map((r) => r.id));
      const last = page[page.length - 1];
      if (page.length < 7 || !last) break;
      after = { at: last.at, id: last.id };
    }
    const expected = (await history.list({ limit: 100 }))
      .filter((r) => r.binding === 'soap12')
      .sort((a, b) => b.at - a.at || b.id - a.id)
      .map((r) => r.id);
    expect(all).toEqual(expected);
    const ranged = await history.search(
      { from: T0 + 60_000, to: T0 + 180_000, ip: '10.0.0.2' },
      { limit: 100 },
    );
    expect(ranged.map((r) => r.at)).toEqual([T0 + 120_000, T0 + 60_000]);
    const stats = await bucketCounts(store.db, { from: T0, to: T0 + 3_600_000, bucketMs: 300_000 });
    expect(stats.reduce((n, s) => n + s.count, 0)).toBe(30);
    expect(stats.every((s) => s.bucket % 300_000 === 0 && typeof s.count === 'number')).toBe(true);
    expect(await history.recentFrom('10.0.0.1', 'AuthCode', T0, 3)).toEqual([
      T0 + 14 * 60_000,
      T0 + 13 * 60_000,
      T0 + 12 * 60_000,
    ]);
  });

  it('finds free text folding ASCII case only, pages it, and exports it in batches', async () => {
    const { recorder, history } = opened;
    const needles: number[] = [];
    for (let i = 0; i < 40; i++) {
      const hit = i % 4 === 0;
      const id = await recorder.record(
        call({ at: T0 + i, response: hit ? `<r>Needle_${i}%</r>` : `<r>hay ${i} ÉCOLE</r>` }),
      );
      if (hit) needles.push(id);
    }
    needles.reverse();
    const page = await history.searchText({ q: 'nEEDLE_' }, { limit: 4 });
    expect(page.rows.map((r) => r.id)).toEqual(needles.slice(0, 4));
    expect(page.complete).toBe(true);
    const rest = await history.searchText({ q: 'needle_' }, { limit: 50, after: page.next ?? undefined });
    expect(rest.rows.map((r) => r.id)).toEqual(needles.slice(4));
    expect(rest.next).toBeNull();
    // `%` and `_` are literal; non-ASCII letters are not folded (as SQLite's LIKE).
    expect((await history.search({ q: '_8%' }, { limit: 50 })).map((r) => r.id)).toEqual([needles[7]]);
    expect(await history.search({ q: 'école' }, { limit: 50 })).toHaveLength(0);
    expect(await history.search({ q: 'ÉCOLE' }, { limit: 50 })).toHaveLength(30);
    const batches: number[][] = [];
    for await (const batch of history.scan({ q: 'needle' }, 3)) batches.push(batch.map((r) => r.id));
    expect(batches.flat()).toEqual(needles);
    expect(Math.max(...batches.map((b) => b.length))).toBe(3);
    expect(history.searchWorker.jobs).toBe(0);
  });

  it('deletes old calls with their deliveries and attempts, in batches, but not a delivery on its way', async () => {
    const { store, recorder, history, outbox } = opened;
    const ids: number[] = [];
    for (let i = 0; i < 25; i++) ids.push(await recorder.record(call({ at: T0 + i }), [sms()]));
    // Some under way, with their attempts; the first 12 settled (sent, dead or expired); the rest
    // waiting. Only the settled old ones go: a delivery waiting or sending keeps its call.
    const claimed = await createOutboxSql(store, testSealer()).claimDue({
      now: Date.now(),
      limit: 20,
      leaseUntil: Date.now() + 60_000,
      kind: 'sms',
      routedTo: ['log'],
      provider: 'log',
      instance: store.instance,
    });
    expect(claimed.length).toBeGreaterThan(12);
    const settled = ids.slice(0, 12);
    for (const [n, status] of (['sent', 'dead', 'expired'] as const).entries()) {
      await store.db
        .updateTable('deliveries')
        .set({ status })
        .where(
          'call_id',
          'in',
          settled.filter((_, i) => i % 3 === n),
        )
        .execute();
    }
    expect(await history.deleteOlderThan(T0 + 20, { batch: 5, alongside: outbox.deleteForCalls })).toBe(12);
    expect((await history.list({ limit: 100 })).map((c) => c.id).sort((a, b) => a - b)).toEqual(
      ids.slice(12),
    );
    expect(await outbox.deliveries.search({}, { limit: 100 })).toHaveLength(13);
    const attempts = await store.db.selectFrom('delivery_attempts').select('delivery_id').execute();
    const deliveryIds = new Set(
      (await store.db.selectFrom('deliveries').select('id').execute()).map((d) => d.id),
    );
    expect(attempts.length).toBeGreaterThan(0);
    for (const a of attempts) expect(deliveryIds.has(a.delivery_id)).toBe(true);
  });

  it('takes exactly the limit when hundreds ask at once, and gives slots back', async () => {
    const { store } = opened;
    const stores = dialect === 'postgres' ? [store, (await opened.another()).store] : [store];
    const check = { dimension: 'authcode-phone', key: '+447700900123', max: 5, windowMs: 60_000 };
    const now = Date.now();
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (stores[i % stores.length] as Store).limits.take([check], now)),
    );
    const accepted = results.filter((r) => r.ok);
    expect(accepted).toHaveLength(5);
    const refused = results.find((r) => !r.ok);
    expect(refused).toEqual({ ok: false, refused: 0, retryAfterMs: 60_000 });
    const first = accepted[0];
    if (first?.ok) await first.release();
    expect((await store.limits.take([check], now)).ok).toBe(true);
    // Both checks or neither: a refusal by the second takes nothing under the first.
    const other = { dimension: 'authcode-ip', key: '10.0.0.9', max: 100, windowMs: 60_000 };
    expect(await store.limits.take([other, check], now)).toMatchObject({ ok: false, refused: 1 });
    await store.limits.forget('authcode-phone', '+447700900123');
    expect((await store.limits.take([check], now + 1)).ok).toBe(true);
    expect(await store.limits.sweep(now + 2)).toBe(1);
  });

  it('creates the first user once however many ask at once, and never demotes the last admin', async () => {
    const { store } = opened;
    const firsts = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.users.createFirst({
          username: `admin${i}`,
          display_name: 'Admin',
          role: 'admin',
          password_hash: 'x',
        }),
      ),
    );
    expect(firsts.filter(Boolean)).toHaveLength(1);
    const a = firsts.find(Boolean);
    if (!a) throw new Error('no admin');
    const b = await store.users.create({
      username: 'other',
      display_name: 'B',
      role: 'admin',
      password_hash: 'x',
    });
    const [x, y] = await Promise.all([
      store.users.update(a.id, { role: 'operator' }),
      store.users.update(b.id, { role: 'operator' }),
    ]);
    expect([x, y].filter((r) => r === 'last-admin')).toHaveLength(1);
  });

  it('runs jobs of one name one after another, across instances, each waiting its turn', async () => {
    const { store } = opened;
    const other = dialect === 'postgres' ? (await opened.another()).store : store;
    const order: string[] = [];
    const job = (who: string, hold?: Promise<void>) => async () => {
      order.push(`${who} starts`);
      await hold;
      order.push(`${who} ends`);
      return who;
    };
    // a holds 'books' until released.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = store.serially('books', job('a', held));
    await waitUntil(() => order.includes('a starts'), { intervalMs: 5, what: 'a running' });
    const second = other.serially('books', job('b'));
    const third = store.serially('other', job('c'));
    try {
      // c (another name) does not wait for a: it ends while a still holds 'books'.
      await third;
      // b does: on PostgreSQL it is seen waiting for a's advisory lock.
      if (dialect === 'postgres') {
        const waiting = sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_locks
          WHERE locktype = 'advisory' AND NOT granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
        await waitUntil(async () => (await waiting.execute(store.db)).rows[0]?.n === 1, {
          intervalMs: 5,
          what: 'b waiting for the lock',
        });
      }
      expect(order).toEqual(['a starts', 'c starts', 'c ends']);
    } finally {
      release();
    }
    const results = await Promise.all([first, second, third]);
    expect(results).toEqual(['a', 'b', 'c']);
    // b waited for a; c (another name) did not.
    expect(order.indexOf('b starts')).toBeGreaterThan(order.indexOf('a ends'));
    expect(order.indexOf('c starts')).toBeLessThan(order.indexOf('a ends'));
    // A failing job does not block the next.
    await expect(store.serially('books', async () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await store.serially('books', async () => 'next')).toBe('next');
  });

  it('runs a sweep on one instance at a time', async () => {
    const { store } = opened;
    const other = dialect === 'postgres' ? (await opened.another()).store : store;
    let release: () => void = () => {};
    const holding = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const first = store.exclusively('retention', async () => {
      started();
      await holding;
    });
    await running;
    const second = await other.exclusively('retention', async () => {});
    release();
    expect(await first).toBe(true);
    // SQLite has no other instance: the job just runs.
    expect(second).toBe(dialect === 'sqlite');
    expect(await other.exclusively('retention', async () => {})).toBe(true);
  });

  it.runIf(dialect === 'sqlite')(
    'commits what arrives while a batch is being committed as one next batch, and flush waits for it',
    async () => {
      const { store, recorder, history } = opened;
      const batches: number[] = [];
      history.live.events.on('recorded', (rows) => batches.push(rows.length));
      // Hold the connection, so that the first batch is stuck in its commit.
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let holding = () => {};
      const isHolding = new Promise<void>((resolve) => {
        holding = resolve;
      });
      const holder = store.db.connection().execute(async () => {
        holding();
        await held;
      });
      await isHolding;
      const first = recorder.record(call({ at: T0 }));
      const later: Promise<number>[] = [];
      // Four turns of the event loop, five calls each, while the first batch waits.
      for (let turn = 0; turn < 4; turn++) {
        await new Promise((r) => setImmediate(r));
        for (let i = 0; i < 5; i++) later.push(recorder.record(call({ at: T0 + 1 + turn * 5 + i })));
      }
      const flushed = recorder.flush();
      release();
      await holder;
      await flushed;
      // Everything is committed once flush resolves, in two batches: the first, then the rest.
      expect(await history.count()).toBe(21);
      expect(batches).toEqual([1, 20]);
      const ids = await Promise.all([first, ...later]);
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    },
  );

  it.runIf(dialect === 'postgres')("shows one instance's calls in another's live tail", async () => {
    const { store, recorder } = opened;
    const other = await opened.another();
    const seen = new Promise<number[]>((resolve) =>
      other.history.live.events.once('recorded', (rows) => resolve(rows.map((r) => r.id))),
    );
    // The listener connects in the background: its first heartbeat, written once it LISTENs,
    // says it is there.
    await waitUntil(
      async () =>
        (await store.db.selectFrom('instances').select('id').where('id', '=', other.store.instance).execute())
          .length === 1,
      { intervalMs: 5, what: "the other instance's LISTEN" },
    );
    const id = await recorder.record(call({ params: '{"phone":"+447700900999"}' }));
    await expect(seen).resolves.toEqual([id]);
  });

  it.runIf(dialect === 'postgres')(
    'tells the other instances of every call of a large batch, and whether it queued deliveries',
    async () => {
      const { store, recorder } = opened;
      const other = await opened.another();
      const told: { ids: readonly number[]; queued: boolean }[] = [];
      other.store.events.on('callsFromOtherInstances', (ids, queued) => told.push({ ids, queued }));
      await waitUntil(
        async () =>
          (
            await store.db
              .selectFrom('instances')
              .select('id')
              .where('id', '=', other.store.instance)
              .execute()
          ).length === 1,
        { intervalMs: 5, what: "the other instance's LISTEN" },
      );
      // One batch of 800 calls (more than one notification holds), a few of them queueing an SMS.
      const queuing = await Promise.all(
        Array.from({ length: 800 }, (_, i) => recorder.record(call({ at: T0 + i }), i % 100 ? [] : [sms()])),
      );
      const quiet = await Promise.all(Array.from({ length: 3 }, () => recorder.record(call())));
      await waitUntil(async () => told.flatMap((t) => t.ids).length === 803, {
        what: 'the notifications of 803 calls',
      });
      const byBatch = (ids: readonly number[]) => told.filter((t) => ids.includes(t.ids[0] as number));
      expect(byBatch(queuing).length).toBeGreaterThan(1);
      expect(byBatch(queuing).flatMap((t) => t.ids)).toEqual(queuing);
      expect(byBatch(queuing).every((t) => t.queued)).toBe(true);
      expect(byBatch(quiet).flatMap((t) => t.ids)).toEqual(quiet);
      expect(byBatch(quiet).every((t) => !t.queued)).toBe(true);
    },
  );
});
