import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { idempotencyKey } from '../src/store/deliveries.js';
import { type Claimed, type NewCall, type NewDelivery, openStore, type Store } from '../src/store/index.js';
import { tempDataDir, testSealer } from './helpers.js';
import { DIALECTS, type FreshDatabase, freshPostgres } from './pg.js';

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

const sms = (phone = '+447700900123', expiresAt?: number): NewDelivery => ({
  kind: 'sms',
  provider: 'log',
  recipient: phone,
  payload: { text: 'Your code is 123456', maskedText: 'Your code is ******' },
  ...(expiresAt === undefined ? {} : { expiresAt }),
});

const push = (topic = 'school-a'): NewDelivery => ({
  kind: 'push',
  provider: 'log',
  recipient: topic,
  payload: { title: 'T', body: 'B', data: { type: 'x' } },
});

interface Opened {
  readonly store: Store;
  /** Another store on the same database (a second instance; PostgreSQL only). */
  another(): Promise<Store>;
}

describe.each(DIALECTS)('the store on %s', (dialect) => {
  let opened: Opened;
  let cleanup: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    cleanup = [];
    const data = tempDataDir();
    cleanup.push(async () => data.remove());
    let fresh: FreshDatabase | undefined;
    if (dialect === 'postgres') {
      fresh = await freshPostgres();
      const db = fresh;
      cleanup.unshift(() => db.drop());
    }
    const open = async () => {
      const s = await openStore({
        dataDir: data.dir,
        synchronous: 'NORMAL',
        databaseUrl: fresh?.url,
        poolSize: 8,
        sealer: testSealer(),
      });
      cleanup.unshift(() => s.close());
      return s;
    };
    opened = { store: await open(), another: open };
  });

  afterEach(async () => {
    for (const step of cleanup) await step();
  });

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
      const second = await opened.another();
      expect(second.readiness()).toMatchObject({ database: true, migrations: true });
    } else {
      await opened.store.close();
      const again = await opened.another();
      expect(again.readiness()).toMatchObject({ database: true, migrations: true });
    }
  });

  it('records concurrent calls with their deliveries in one commit, and reads numbers back as numbers', async () => {
    const { store } = opened;
    const ids = await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.calls.record(call({ at: T0 + i }), i % 2 ? [sms()] : [])),
    );
    expect(new Set(ids).size).toBe(50);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    const row = await store.calls.findById(ids[7] as number);
    expect(row).toMatchObject({ at: T0 + 7, status: 200, duration_ms: 1.25, request_id: 'req-1' });
    expect(typeof row?.at).toBe('number');
    expect(typeof row?.id).toBe('number');
    expect(await store.calls.count()).toBe(50);
    const deliveries = await store.deliveries.search({}, { limit: 100 });
    expect(deliveries).toHaveLength(25);
    expect(deliveries.every((d) => typeof d.created_at === 'number' && d.status === 'pending')).toBe(true);
    expect((await store.deliveries.counts()).pending).toBe(25);
  });

  it('records a request holding NUL (PostgreSQL keeps U+FFFD in its place)', async () => {
    const { store } = opened;
    const id = await store.calls.record(
      call({ request: 'POST / HTTP/1.1\r\n\r\n<a>\u0000</a>', params: '{"x":"\u0000"}' }),
    );
    const row = await store.calls.findById(id);
    const kept = dialect === 'postgres' ? '\uFFFD' : '\u0000';
    expect(row?.request).toBe(`POST / HTTP/1.1\r\n\r\n<a>${kept}</a>`);
    expect(row?.params).toBe(`{"x":"${kept}"}`);
  });

  it('tells the live tail of each commit', async () => {
    const { store } = opened;
    const seen: number[] = [];
    store.calls.events.on('recorded', (rows) => seen.push(...rows.map((r) => r.id)));
    const ids = await Promise.all([store.calls.record(call()), store.calls.record(call())]);
    expect(seen).toEqual(ids);
  });

  it('lists newest first with keyset pages under each filter, and counts by bucket', async () => {
    const { store } = opened;
    for (let i = 0; i < 30; i++) {
      await store.calls.record(
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
      const page = await store.calls.search({ binding: 'soap12' }, { limit: 7, after });
      all.push(...page.map((r) => r.id));
      const last = page[page.length - 1];
      if (page.length < 7 || !last) break;
      after = { at: last.at, id: last.id };
    }
    const expected = (await store.calls.list({ limit: 100 }))
      .filter((r) => r.binding === 'soap12')
      .sort((a, b) => b.at - a.at || b.id - a.id)
      .map((r) => r.id);
    expect(all).toEqual(expected);
    const ranged = await store.calls.search(
      { from: T0 + 60_000, to: T0 + 180_000, ip: '10.0.0.2' },
      { limit: 100 },
    );
    expect(ranged.map((r) => r.at)).toEqual([T0 + 120_000, T0 + 60_000]);
    const stats = await store.calls.stats({ from: T0, to: T0 + 3_600_000, bucketMs: 300_000 });
    expect(stats.reduce((n, s) => n + s.count, 0)).toBe(30);
    expect(stats.every((s) => s.bucket % 300_000 === 0 && typeof s.count === 'number')).toBe(true);
    expect(await store.calls.recentFrom('10.0.0.1', 'AuthCode', T0, 3)).toEqual([
      T0 + 14 * 60_000,
      T0 + 13 * 60_000,
      T0 + 12 * 60_000,
    ]);
  });

  it('finds free text folding ASCII case only, pages it, and exports it in batches', async () => {
    const { store } = opened;
    const needles: number[] = [];
    for (let i = 0; i < 40; i++) {
      const hit = i % 4 === 0;
      const id = await store.calls.record(
        call({ at: T0 + i, response: hit ? `<r>Needle_${i}%</r>` : `<r>hay ${i} ÉCOLE</r>` }),
      );
      if (hit) needles.push(id);
    }
    needles.reverse();
    const page = await store.calls.searchText({ q: 'nEEDLE_' }, { limit: 4 });
    expect(page.rows.map((r) => r.id)).toEqual(needles.slice(0, 4));
    expect(page.complete).toBe(true);
    const rest = await store.calls.searchText({ q: 'needle_' }, { limit: 50, after: page.next ?? undefined });
    expect(rest.rows.map((r) => r.id)).toEqual(needles.slice(4));
    expect(rest.next).toBeNull();
    // `%` and `_` are literal; non-ASCII letters are not folded (as SQLite's LIKE).
    expect((await store.calls.search({ q: '_8%' }, { limit: 50 })).map((r) => r.id)).toEqual([needles[7]]);
    expect(await store.calls.search({ q: 'école' }, { limit: 50 })).toHaveLength(0);
    expect(await store.calls.search({ q: 'ÉCOLE' }, { limit: 50 })).toHaveLength(30);
    const batches: number[][] = [];
    for await (const batch of store.calls.scan({ q: 'needle' }, 3)) batches.push(batch.map((r) => r.id));
    expect(batches.flat()).toEqual(needles);
    expect(Math.max(...batches.map((b) => b.length))).toBe(3);
    expect(store.calls.searchWorker.jobs).toBe(0);
  });

  it('deletes old calls with their deliveries and attempts, in batches', async () => {
    const { store } = opened;
    for (let i = 0; i < 25; i++) await store.calls.record(call({ at: T0 + i }), [sms()]);
    await store.deliveries.claimDue(Date.now(), 10, Date.now() + 60_000);
    expect(await store.calls.deleteOlderThan(T0 + 20, 7)).toBe(20);
    expect(await store.calls.count()).toBe(5);
    expect(await store.deliveries.search({}, { limit: 100 })).toHaveLength(5);
  });

  describe('the outbox', () => {
    it('claims due deliveries once each, with an attempt written before the send', async () => {
      const { store } = opened;
      await store.calls.record(call(), [sms(), sms(), push()]);
      const now = Date.now();
      const first = await store.deliveries.claimDue(now, 2, now + 30_000);
      const second = await store.deliveries.claimDue(now, 5, now + 30_000);
      expect(first).toHaveLength(2);
      expect(second).toHaveLength(1);
      const claimed = [...first, ...second];
      expect(new Set(claimed.map((c) => c.delivery.id)).size).toBe(3);
      for (const c of claimed) {
        expect(c.delivery).toMatchObject({ status: 'sending', attempts: 1, lease_until: now + 30_000 });
        const attempts = await store.deliveries.attemptsOf(c.delivery.id);
        expect(attempts).toEqual([
          expect.objectContaining({ id: c.attemptId, started_at: now, outcome: null }),
        ]);
      }
      expect(await store.deliveries.claimDue(now, 5, now + 30_000)).toEqual([]);
    });

    it.runIf(dialect === 'sqlite')(
      'hands deliveries over in the call commit while there is room, and queues the rest',
      async () => {
        const { store } = opened;
        const taken: Claimed[] = [];
        let room = 2;
        const released: string[] = [];
        store.deliveries.handoff = {
          leaseMs: 30_000,
          reserve: () => room-- > 0,
          release: (kind, count) => released.push(`${kind}×${count}`),
          take: (claimed) => taken.push(...claimed),
        };
        const before = Date.now();
        const id = await store.calls.record(call(), [sms(), push(), sms('+447700900999')]);
        // Claimed in the commit: sending, its attempt written, before anyone was told.
        expect(taken.map((c) => [c.delivery.call_id, c.delivery.kind, c.delivery.status])).toEqual([
          [id, 'sms', 'sending'],
          [id, 'push', 'sending'],
        ]);
        for (const c of taken) {
          const row = await store.deliveries.findById(c.delivery.id);
          expect(row).toMatchObject({ status: 'sending', attempts: 1 });
          expect(row?.lease_until).toBeGreaterThanOrEqual(before + 30_000);
          expect(c.delivery).toEqual(row);
          expect(await store.deliveries.attemptsOf(c.delivery.id)).toEqual([
            expect.objectContaining({ id: c.attemptId, outcome: null }),
          ]);
        }
        // No room left: the third is queued as before, for a claim pass.
        const rest = await store.deliveries.claimDue(Date.now(), 5, Date.now() + 30_000);
        expect(rest.map((c) => c.delivery.recipient)).toEqual(['+447700900999']);
        // An auth code already past its validity is never handed over.
        room = 5;
        await store.calls.record(call(), [sms('+447700900111', before - 1)]);
        expect(taken).toHaveLength(2);
        // A commit that fails (here the second record of the batch) gives its slots back.
        const batch = [store.calls.record(call(), [sms()]), store.calls.record(call({ at: null as never }))];
        for (const recorded of batch) await expect(recorded).rejects.toThrow();
        expect(released).toEqual(['sms×1']);
        expect(taken).toHaveLength(2);
      },
    );

    it('settles a sent SMS keeping only its masked text, and retries a transient failure later', async () => {
      const { store } = opened;
      await store.calls.record(call(), [sms(), sms()]);
      const now = Date.now();
      const [a, b] = await store.deliveries.claimDue(now, 2, now + 30_000);
      if (!a || !b) throw new Error('not claimed');
      await store.deliveries.finishAttempts([
        { claimed: a, now, result: { outcome: 'sent', providerId: 'SM1', response: '{"sid":"SM1"}' } },
        {
          claimed: b,
          now,
          result: {
            outcome: 'transient',
            error: 'busy',
            status: 503,
            retryAt: now + 5000,
            retryAfterMs: 5000,
          },
        },
      ]);
      const sent = await store.deliveries.findById(a.delivery.id);
      expect(sent).toMatchObject({ status: 'sent', provider_id: 'SM1', sent_at: now, lease_until: null });
      expect(JSON.parse(sent?.payload ?? '{}')).toEqual({ maskedText: 'Your code is ******' });
      // Settled: the sealed text is destroyed.
      expect(sent?.secret).toBeNull();
      const later = await store.deliveries.findById(b.delivery.id);
      expect(later).toMatchObject({ status: 'pending', next_attempt_at: now + 5000, last_error: 'busy' });
      // Still to be sent: its text is kept, sealed, never in the payload.
      expect(JSON.parse(later?.payload ?? '{}')).toEqual({ maskedText: 'Your code is ******' });
      expect(later?.secret).toMatch(/^v1\./);
      expect(later?.secret).not.toContain('123456');
      expect(store.deliveries.openText(later as NonNullable<typeof later>)).toBe('Your code is 123456');
      expect(await store.deliveries.attemptsOf(b.delivery.id)).toEqual([
        expect.objectContaining({
          outcome: 'transient',
          status: 503,
          retry_after_ms: 5000,
          finished_at: now,
        }),
      ]);
      expect(await store.deliveries.recordProviderStatus('SM1', 'delivered', now)).toBe(true);
      expect(await store.deliveries.recordProviderStatus('SM-unknown', 'delivered', now)).toBe(false);
      const outbox = await store.deliveries.outbox(now + 6000);
      expect(outbox).toMatchObject({ due: 1, oldestDueAt: now + 5000 });
      expect(outbox.byStatus).toMatchObject({ sent: 1, pending: 1, sending: 0 });
    });

    it('recovers a claim whose lease ran out, and the late finish of the old claim does not settle it', async () => {
      const { store } = opened;
      await store.calls.record(call(), [sms()]);
      const now = Date.now();
      const [old] = await store.deliveries.claimDue(now, 1, now + 1000);
      if (!old) throw new Error('not claimed');
      expect(await store.deliveries.recoverInterrupted(now + 500)).toBe(0);
      expect(await store.deliveries.recoverInterrupted(now + 1500)).toBe(1);
      expect(await store.deliveries.attemptsOf(old.delivery.id)).toEqual([
        expect.objectContaining({ outcome: 'interrupted' }),
      ]);
      const [again] = await store.deliveries.claimDue(now + 1500, 1, now + 60_000);
      expect(again?.delivery).toMatchObject({ id: old.delivery.id, attempts: 2 });
      await store.deliveries.finishAttempts([
        {
          claimed: old,
          now: now + 1600,
          result: { outcome: 'permanent', error: 'late', retryAt: undefined },
        },
      ]);
      expect(await store.deliveries.findById(old.delivery.id)).toMatchObject({
        status: 'sending',
        attempts: 2,
      });
      if (!again) throw new Error('not claimed');
      await store.deliveries.finishAttempts([
        { claimed: again, now: now + 1700, result: { outcome: 'sent', response: 'ok' } },
      ]);
      expect(await store.deliveries.findById(old.delivery.id)).toMatchObject({ status: 'sent' });
      const attempts = await store.deliveries.attemptsOf(old.delivery.id);
      expect(attempts.map((a) => a.outcome)).toEqual(['interrupted', 'sent']);
    });

    it('expires codes past their validity, masks dead ones, and retries only what can be resent', async () => {
      const { store } = opened;
      const queued = Date.now();
      await store.calls.record(call(), [
        sms('+447700900001', queued + 1000),
        sms('+447700900002', queued + 1000),
        push(),
      ]);
      const now = Date.now();
      const claimed = await store.deliveries.claimDue(now, 3, now + 30_000);
      const byRecipient = new Map(claimed.map((c) => [c.delivery.recipient, c]));
      const dead = byRecipient.get('+447700900002');
      const deadPush = byRecipient.get('school-a');
      const pending = byRecipient.get('+447700900001');
      if (!dead || !deadPush || !pending) throw new Error('not claimed');
      await store.deliveries.finishAttempts([
        { claimed: dead, now, result: { outcome: 'permanent', error: 'bad number', retryAt: undefined } },
        { claimed: deadPush, now, result: { outcome: 'permanent', error: 'no topic', retryAt: undefined } },
        { claimed: pending, now, result: { outcome: 'transient', error: 'busy', retryAt: now + 1000 } },
      ]);
      expect(await store.deliveries.expireStale(queued + 2000)).toBe(1);
      expect(await store.deliveries.findById(pending.delivery.id)).toMatchObject({ status: 'expired' });
      const masked = await store.deliveries.findById(dead.delivery.id);
      expect(masked?.status).toBe('dead');
      expect(JSON.parse(masked?.payload ?? '{}')).toEqual({ maskedText: 'Your code is ******' });
      // The SMS lost its text: only the push can be sent again.
      expect(await store.deliveries.retry(dead.delivery.id, now)).toBe(false);
      expect(await store.deliveries.retryAllDead(now)).toBe(1);
      expect(await store.deliveries.findById(deadPush.delivery.id)).toMatchObject({
        status: 'pending',
        attempts: 0,
      });
      expect(await store.deliveries.pendingPushes()).toBe(1);
      expect(await store.deliveries.makePushesDue(now + 5)).toBe(1);
    });

    it('never hands one delivery to two instances claiming at once', async () => {
      const { store } = opened;
      const rows = Array.from({ length: 300 }, () => sms());
      await store.calls.record(call(), rows);
      const stores =
        dialect === 'postgres' ? [store, await opened.another(), await opened.another()] : [store];
      const now = Date.now();
      const claims = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          (stores[i % stores.length] as Store).deliveries.claimDue(now, 13, now + 30_000),
        ),
      );
      const ids = claims.flat().map((c) => c.delivery.id);
      expect(ids).toHaveLength(300);
      expect(new Set(ids).size).toBe(300);
    });
  });

  it('takes exactly the limit when hundreds ask at once, and gives slots back', async () => {
    const { store } = opened;
    const stores = dialect === 'postgres' ? [store, await opened.another()] : [store];
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
    const other = dialect === 'postgres' ? await opened.another() : store;
    const order: string[] = [];
    const job = (who: string, ms: number) => async () => {
      order.push(`${who} starts`);
      await new Promise((r) => setTimeout(r, ms));
      order.push(`${who} ends`);
      return who;
    };
    const first = store.serially('books', job('a', 150));
    await new Promise((r) => setTimeout(r, 30));
    const results = await Promise.all([
      first,
      other.serially('books', job('b', 10)),
      store.serially('other', job('c', 10)),
    ]);
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
    const other = dialect === 'postgres' ? await opened.another() : store;
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
      const { store } = opened;
      const batches: number[] = [];
      store.calls.events.on('recorded', (rows) => batches.push(rows.length));
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
      const first = store.calls.record(call({ at: T0 }));
      const later: Promise<number>[] = [];
      // Four turns of the event loop, five calls each, while the first batch waits.
      for (let turn = 0; turn < 4; turn++) {
        await new Promise((r) => setImmediate(r));
        for (let i = 0; i < 5; i++) later.push(store.calls.record(call({ at: T0 + 1 + turn * 5 + i })));
      }
      const flushed = store.calls.flush();
      release();
      await holder;
      await flushed;
      // Everything is committed once flush resolves, in two batches: the first, then the rest.
      expect(await store.calls.count()).toBe(21);
      expect(batches).toEqual([1, 20]);
      const ids = await Promise.all([first, ...later]);
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    },
  );

  it.runIf(dialect === 'sqlite')(
    'commits calls with FULL durability around the outbox bookkeeping that does not wait for the disk',
    async () => {
      const data = tempDataDir();
      const store = await openStore({ dataDir: data.dir, synchronous: 'FULL', sealer: testSealer() });
      try {
        const level = async () =>
          (await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(store.db)).rows[0]?.synchronous;
        expect(await level()).toBe(2);
        await store.calls.record(call(), [sms(), sms()]);
        const now = Date.now();
        const claimed = await store.deliveries.claimDue(now, 5, now + 30_000);
        await store.deliveries.finishAttempts(
          claimed.map((c) => ({ claimed: c, now, result: { outcome: 'sent', response: 'ok' } as const })),
        );
        // FULL again for what follows (a call's commit waits for the disk).
        expect(await level()).toBe(2);
        expect((await store.deliveries.counts()).sent).toBe(2);
      } finally {
        await store.close();
        data.remove();
      }
    },
  );

  it.runIf(dialect === 'postgres')(
    "wakes another instance's dispatcher when a commit queues deliveries",
    async () => {
      const { store } = opened;
      const other = await opened.another();
      let woken = 0;
      other.deliveries.events.on('queued', () => woken++);
      await new Promise((r) => setTimeout(r, 300));
      await store.calls.record(call());
      await new Promise((r) => setTimeout(r, 300));
      expect(woken).toBe(0);
      await store.calls.record(call(), [sms()]);
      const deadline = Date.now() + 5000;
      while (woken === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(woken).toBe(1);
    },
  );

  it.runIf(dialect === 'postgres')("shows one instance's calls in another's live tail", async () => {
    const { store } = opened;
    const other = await opened.another();
    const seen = new Promise<number[]>((resolve) =>
      other.calls.events.once('recorded', (rows) => resolve(rows.map((r) => r.id))),
    );
    // The listener connects in the background: give it a moment before the commit.
    await new Promise((r) => setTimeout(r, 300));
    const id = await store.calls.record(call({ params: '{"phone":"+447700900999"}' }));
    await expect(seen).resolves.toEqual([id]);
  });
});

describe('a delivery idempotency key', () => {
  it('is a UUID of version 7: unique, and in the order of its time', () => {
    const t = Date.UTC(2026, 10, 23, 9, 0, 0);
    const keys = Array.from({ length: 2000 }, (_, i) => idempotencyKey(t + Math.floor(i / 10)));
    for (const key of keys)
      expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(keys).size).toBe(keys.length);
    // The time is its first 48 bits; a later millisecond sorts after, as text too.
    expect(Number.parseInt(keys[0]?.replace('-', '').slice(0, 12) ?? '', 16)).toBe(t);
    for (let i = 10; i < keys.length; i += 10)
      expect((keys[i - 1] as string) < (keys[i] as string)).toBe(true);
  });
});
