/**
 * The outbox's parts: the transitions of a delivery's life, the retry delays, a provider's circuit
 * and the lanes' routing, as tables; then its SQL on every database the store supports (always
 * SQLite, PostgreSQL when TEST_DATABASE_URL is set), each transition as a delivery goes through it.
 */
import type { DeliveryStatus } from '@school/contract';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nextTry, retryDelay } from '../src/outbox/backoff.js';
import {
  Circuit,
  type CircuitChange,
  COOL_DOWN_MS,
  FAILURES_IN_A_ROW,
  MIN_IN_WINDOW,
  OutcomeWindow,
  PROBES,
  WINDOW_BUCKETS,
  WINDOW_MS,
} from '../src/outbox/circuit.js';
import { createDeliveryRepository, type DeliveryRepository } from '../src/outbox/deliveries.js';
import { createEnqueue } from '../src/outbox/enqueue.js';
import { hedgeable, Race } from '../src/outbox/hedge.js';
import { OUTBOX_TABLES } from '../src/outbox/index.js';
import { Lane, Lanes, RAMP_FIRST } from '../src/outbox/lanes.js';
import { idempotencyKey } from '../src/outbox/payload.js';
import { type Claimed, createOutboxSql, type OutboxSql } from '../src/outbox/sql.js';
import { next, type OutboxEvent, TRANSITIONS } from '../src/outbox/states.js';
import type { SendResult, SmsProvider } from '../src/providers/types.js';
import { createCallRecorder } from '../src/recording/recorder.js';
import { createDeliveryRollups } from '../src/stats/delivery-rollups.js';
import { type NewCall, openStore, type Store } from '../src/store/index.js';
import { callRow, push, sms, tempDataDir, testSealer, waitUntil } from './helpers.js';
import { openTestInstance } from './instance.js';
import { DIALECTS, freshPostgres, openTestStoresOn, type TestStores } from './pg.js';

const STATUSES: readonly DeliveryStatus[] = ['pending', 'sending', 'sent', 'dead', 'expired'];

describe("a delivery's transitions", () => {
  // Every event, from every status: where it goes, or that it cannot happen there.
  const table: [OutboxEvent, Partial<Record<DeliveryStatus, DeliveryStatus>>][] = [
    ['claim', { pending: 'sending' }],
    ['hedge', { sending: 'sending' }],
    ['sent', { sending: 'sent' }],
    ['retry', { sending: 'pending' }],
    ['fail', { sending: 'dead' }],
    ['interrupt', { sending: 'pending' }],
    ['expire', { pending: 'expired' }],
    ['forget', { dead: 'dead' }],
    ['resend', { dead: 'pending' }],
    ['due-now', { pending: 'pending' }],
  ];
  it('has an entry for every event', () => {
    expect(table.map(([e]) => e).sort()).toEqual(Object.keys(TRANSITIONS).sort());
  });
  for (const [event, moves] of table) {
    for (const status of STATUSES) {
      it(`${event} from ${status}: ${moves[status] ?? 'not allowed'}`, () => {
        expect(next(status, event)).toBe(moves[status]);
      });
    }
  }
  it('never leaves sent or expired (settled)', () => {
    for (const event of Object.keys(TRANSITIONS) as OutboxEvent[]) {
      expect(next('sent', event)).toBeUndefined();
      expect(next('expired', event)).toBeUndefined();
    }
  });
});

describe('retry delays', () => {
  const half = () => 0;
  const full = () => 0.999_999;
  // attempt, Retry-After, base, max → the delay at the low and high ends of the jitter.
  const table: [number, number | undefined, number, number, number, number][] = [
    [1, undefined, 2000, 600_000, 1000, 2000],
    [2, undefined, 2000, 600_000, 2000, 4000],
    [3, undefined, 2000, 600_000, 4000, 8000],
    [8, undefined, 2000, 600_000, 128_000, 256_000],
    [10, undefined, 2000, 600_000, 300_000, 600_000],
    [30, undefined, 2000, 600_000, 300_000, 600_000],
    [1, 5000, 2000, 600_000, 5000, 5000],
    [3, 5000, 2000, 600_000, 5000, 8000],
    [0, undefined, 100, 1000, 50, 100],
  ];
  it.each(table)(
    'attempt %i, Retry-After %s, base %i, cap %i: %i to %i ms',
    (attempt, after, base, max, low, high) => {
      expect(retryDelay(attempt, after, base, max, half)).toBe(low);
      expect(retryDelay(attempt, after, base, max, full)).toBe(high);
    },
  );

  it('stops at the last attempt, and never tries an auth code after its validity', () => {
    const base = { retryAfterMs: undefined, base: 2000, max: 600_000, random: half };
    expect(nextTry({ ...base, now: 0, attempts: 8, maxAttempts: 8, expiresAt: null })).toBeUndefined();
    expect(nextTry({ ...base, now: 0, attempts: 3, maxAttempts: 8, expiresAt: null })).toBe(4000);
    // Set at the end of its validity: the expiry sweep expires it then.
    expect(nextTry({ ...base, now: 0, attempts: 3, maxAttempts: 8, expiresAt: 3000 })).toBe(3000);
  });
});

describe("a provider's circuit", () => {
  function circuit() {
    const changes: CircuitChange[] = [];
    const c = new Circuit((change) => changes.push(change), 0);
    return { c, changes };
  }
  const run = (c: Circuit, outcomes: boolean[], at: number, spacing = 1) => {
    outcomes.forEach((failed, i) => {
      c.started(at + i * spacing);
      c.ended(failed, at + i * spacing);
    });
  };

  it(`opens after ${FAILURES_IN_A_ROW} failures in a row, not before, and a success resets the count`, () => {
    const { c, changes } = circuit();
    run(c, [true, true, true, true, false, true, true, true, true], 0);
    expect(c.state(10)).toBe('closed');
    run(c, [true], 20);
    expect(c.state(21)).toBe('open');
    expect(changes.map((x) => x.to)).toEqual(['open']);
    expect(c.allow(10, 21)).toBe(0);
  });

  it('opens when half of the attempts of the window failed, once there were enough of them', () => {
    const { c } = circuit();
    // Alternating: never 5 in a row, half failed; opens on the tenth.
    run(c, [true, false, true, false, true, false, true, false, true], 0, 100);
    expect(c.state(900)).toBe('closed');
    run(c, [false], 1000);
    expect(c.state(1001)).toBe('open');
    expect(MIN_IN_WINDOW).toBe(10);
  });

  it('forgets outcomes older than the window', () => {
    const { c } = circuit();
    run(c, [true, false, true, false, true, false, true, false, true], 0, 100);
    run(c, [false], WINDOW_MS + 2000);
    expect(c.state(WINDOW_MS + 2001)).toBe('closed');
  });

  it('counts its window in a fixed number of buckets, whatever the send rate', () => {
    const { c } = circuit();
    // A million outcomes over 100 s (10 000 a second), one failure in ten: never opens.
    const total = 1_000_000;
    const at = (i: number) => Math.floor((i * 100_000) / total);
    for (let i = 0; i < total; i++) {
      c.started(at(i));
      c.ended(i % 10 === 9, at(i));
    }
    expect(c.state(at(total - 1))).toBe('closed');
    const last = at(total - 1);
    // What the window holds: the outcomes of its buckets, the newest one's second and the nine before.
    const from =
      (Math.floor(last / (WINDOW_MS / WINDOW_BUCKETS)) - (WINDOW_BUCKETS - 1)) * (WINDOW_MS / WINDOW_BUCKETS);
    let attempts = 0;
    let failures = 0;
    for (let i = 0; i < total; i++) {
      if (at(i) < from) continue;
      attempts++;
      if (i % 10 === 9) failures++;
    }
    expect(c.window()).toEqual({ attempts, failures, buckets: WINDOW_BUCKETS });
    expect(attempts).toBeGreaterThan(90_000);
    // A long silence empties it; a clock that goes back counts in the newest bucket.
    c.ended(false, last + 3 * WINDOW_MS);
    c.ended(true, last + 3 * WINDOW_MS - 5000);
    expect(c.window()).toEqual({ attempts: 2, failures: 1, buckets: WINDOW_BUCKETS });
  });

  it("counts what a list of the window's outcomes would, bucket by bucket", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3000 }), fc.boolean()), { maxLength: 200 }),
        (steps) => {
          const window = new OutcomeWindow();
          const seen: [number, boolean][] = [];
          let now = 0;
          for (const [gap, failed] of steps) {
            now += gap;
            window.add(failed, now);
            seen.push([now, failed]);
            const bucket = (t: number) => Math.floor(t / (WINDOW_MS / WINDOW_BUCKETS));
            const kept = seen.filter(([t]) => bucket(t) > bucket(now) - WINDOW_BUCKETS);
            expect([window.attempts, window.failures]).toEqual([
              kept.length,
              kept.filter(([, f]) => f).length,
            ]);
          }
        },
      ),
    );
  });

  it(`lets ${PROBES} probes through after its cool-down, closes when they succeed`, () => {
    const { c, changes } = circuit();
    run(c, Array(FAILURES_IN_A_ROW).fill(true), 0);
    const after = FAILURES_IN_A_ROW + COOL_DOWN_MS;
    expect(c.state(after - 10)).toBe('open');
    expect(c.state(after)).toBe('half-open');
    expect(c.allow(10, after)).toBe(PROBES);
    for (let i = 0; i < PROBES; i++) c.started(after);
    expect(c.allow(10, after)).toBe(0);
    for (let i = 0; i < PROBES; i++) c.ended(false, after + 1);
    expect(c.state(after + 2)).toBe('closed');
    expect(changes.map((x) => x.to)).toEqual(['open', 'half-open', 'closed']);
    expect(c.allow(10, after + 2)).toBe(10);
  });

  it('opens again, for twice as long, when a probe fails; an attempt that did not happen gives its probe back', () => {
    const { c, changes } = circuit();
    run(c, Array(FAILURES_IN_A_ROW).fill(true), 0);
    const after = FAILURES_IN_A_ROW + COOL_DOWN_MS;
    expect(c.state(after)).toBe('half-open');
    c.started(after);
    c.cancelled();
    expect(c.allow(10, after)).toBe(PROBES);
    c.started(after);
    c.ended(true, after + 1);
    expect(c.state(after + 1 + COOL_DOWN_MS)).toBe('open');
    expect(c.state(after + 1 + 2 * COOL_DOWN_MS)).toBe('half-open');
    expect(changes.map((x) => x.to)).toEqual(['open', 'half-open', 'open', 'half-open']);
  });
});

describe("the lanes' routing", () => {
  const provider = (name: string): SmsProvider => ({
    name,
    describe: () => name,
    send: async () => ({ ok: true, response: 'ok' }),
  });
  const limits = { concurrency: 4, perSecond: null };
  const lanes = () => {
    const primary = new Lane({ kind: 'sms', provider: provider('http') }, 'primary', limits, () => {});
    const fallback = new Lane({ kind: 'sms', provider: provider('twilio') }, 'fallback', limits, () => {});
    const push = new Lane({ kind: 'push', provider: provider('log') as never }, 'primary', limits, () => {});
    return { all: new Lanes([primary, fallback, push]), primary, fallback };
  };
  const open = (lane: Lane, now: number) => {
    for (let i = 0; i < FAILURES_IN_A_ROW; i++) {
      lane.circuit.started(now);
      lane.circuit.ended(true, now);
    }
  };
  const noWake = () => {};

  it('gives each provider its own id, the fallback with -fallback', () => {
    const { primary, fallback } = lanes();
    expect([primary.id, fallback.id]).toEqual(['http', 'twilio-fallback']);
  });

  it("lets a closed lane take over an open one's deliveries, and not the other way", () => {
    const { all, primary, fallback } = lanes();
    expect(all.routedTo(primary, 0)).toEqual(['http']);
    expect(all.routedTo(fallback, 0)).toEqual(['twilio-fallback']);
    open(primary, 0);
    expect(all.routedTo(primary, 1)).toEqual(['http']);
    expect(primary.room(1, noWake)).toBe(0);
    expect(all.routedTo(fallback, 1)).toEqual(['twilio-fallback', 'http']);
    // A new delivery for the open primary starts on the fallback.
    expect(all.forNew('sms', 'http', 1, noWake)).toBe(fallback);
  });

  it('fails over only from the primary, to a fallback whose circuit is not open', () => {
    const { all, primary, fallback } = lanes();
    expect(all.failoverFrom(primary, 0)).toBe(fallback);
    expect(all.failoverFrom(fallback, 0)).toBeUndefined();
    open(fallback, 0);
    expect(all.failoverFrom(primary, 1)).toBeUndefined();
  });

  it('lets the fallback take what waits for a primary whose every slot is held by attempts past the hedge', () => {
    const { all, primary, fallback } = lanes();
    primary.take(4, 0);
    // Full, every attempt answering in time: the primary's own.
    expect(all.routedTo(fallback, 0)).toEqual(['twilio-fallback']);
    primary.stalled = 1;
    expect(primary.stalling).toBe(true);
    expect(all.routedTo(fallback, 0)).toEqual(['twilio-fallback', 'http']);
    expect(all.forNew('sms', 'http', 0, noWake)).toBe(fallback);
    // Never the other way, and not once a slot is free again.
    fallback.take(4, 0);
    fallback.stalled = 4;
    expect(all.routedTo(primary, 0)).toEqual(['http']);
    primary.ended(false, 1);
    expect(all.routedTo(fallback, 1)).toEqual(['twilio-fallback']);
  });

  it("hedges only a code's first attempt on the primary, on its fallback", () => {
    const { all, primary, fallback } = lanes();
    const code = (over: Partial<Claimed['delivery']> = {}) =>
      ({ delivery: { kind: 'sms', attempts: 1, expires_at: 1, ...over }, attemptId: 1 }) as Claimed;
    expect(all.hedgeFrom(primary)).toBe(fallback);
    expect(all.hedgeFrom(fallback)).toBeUndefined();
    expect(hedgeable(primary, code(), fallback, 8)).toBe(true);
    // Not from the fallback, nor without one; not a push or an SMS that is no code; not a retry or
    // a takeover (which may have been hedged already); not past the last attempt allowed.
    expect(hedgeable(fallback, code(), undefined, 8)).toBe(false);
    expect(hedgeable(primary, code(), undefined, 8)).toBe(false);
    expect(hedgeable(primary, code({ kind: 'push', expires_at: null }), fallback, 8)).toBe(false);
    expect(hedgeable(primary, code({ expires_at: null }), fallback, 8)).toBe(false);
    expect(hedgeable(primary, code({ attempts: 2 }), fallback, 8)).toBe(false);
    expect(hedgeable(primary, code(), fallback, 1)).toBe(false);
  });

  it("settles a hedged code by the first attempt that sent it, or by the fallback's result once both failed", () => {
    const { primary, fallback } = lanes();
    const ok: SendResult = { ok: true, response: 'ok' };
    const timeout: SendResult = { ok: false, kind: 'transient', error: 'no answer', taken: 'unknown' };
    const refused: SendResult = { ok: false, kind: 'transient', error: '503', status: 503, taken: 'no' };
    const invalid: SendResult = { ok: false, kind: 'permanent', error: 'invalid', status: 400, taken: 'no' };
    const race = () => new Race(primary, { delivery: {}, attemptId: 1 } as Claimed, fallback);
    // The fallback sends while the primary hangs; the primary's timeout later changes nothing.
    let r = race();
    expect(r.end(fallback, ok)).toEqual({ kind: 'sent', unsure: 'http' });
    expect(r.end(primary, timeout)).toEqual({ kind: 'leave' });
    // The primary answers first: the fallback, still under way, may send it too.
    r = race();
    expect(r.end(primary, ok)).toEqual({ kind: 'sent', unsure: 'twilio-fallback' });
    expect(r.end(fallback, ok)).toEqual({ kind: 'leave' });
    // The primary refused for certain, then the fallback sent it: it cannot arrive twice.
    r = race();
    expect(r.end(primary, refused)).toEqual({ kind: 'leave' });
    expect(r.end(fallback, ok)).toEqual({ kind: 'sent', unsure: null });
    // Both failed: the fallback's result decides, whichever ended last.
    r = race();
    expect(r.end(fallback, invalid)).toEqual({ kind: 'leave' });
    expect(r.end(primary, timeout)).toEqual({ kind: 'failed', fallback: invalid, unsure: 'http' });
    r = race();
    expect(r.end(primary, refused)).toEqual({ kind: 'leave' });
    expect(r.end(fallback, timeout)).toEqual({
      kind: 'failed',
      fallback: timeout,
      unsure: 'twilio-fallback',
    });
  });

  it('counts slots and a pause per lane', () => {
    const { primary, fallback } = lanes();
    primary.take(4, 0);
    expect(primary.room(0, noWake)).toBe(0);
    expect(fallback.room(0, noWake)).toBe(4);
    let wake = 0;
    fallback.pause(5000);
    expect(fallback.room(10, (at) => (wake = at))).toBe(0);
    expect(wake).toBe(5000);
    primary.giveBack(1);
    expect(primary.room(0, noWake)).toBe(1);
  });

  it('ramps up after a takeover: attempts under way grow as answers come back, and halve on a failure', () => {
    const lane = new Lane(
      { kind: 'sms', provider: provider('http') },
      'primary',
      { concurrency: 200, perSecond: null, slowMs: 2500 },
      () => {},
    );
    expect(lane.room(0, noWake)).toBe(200);
    lane.ramp();
    expect(lane.room(0, noWake)).toBe(RAMP_FIRST);
    lane.take(RAMP_FIRST, 0);
    expect(lane.room(0, noWake)).toBe(0);
    // Each quick success lets one more start besides the one it freed; a slow one only its own.
    lane.ended(false, 10, 0);
    expect(lane.room(10, noWake)).toBe(2);
    lane.ended(false, 5000, 0);
    expect(lane.room(5000, noWake)).toBe(3);
    lane.ended(true, 5010, 5000);
    expect(lane.rampCap).toBe(RAMP_FIRST);
    // Enough successes and the ramp is over: the whole concurrency again.
    for (let i = 0; i < 200; i++) {
      lane.take(1, 30);
      lane.ended(false, 30);
    }
    expect(lane.rampCap).toBeUndefined();
    expect(lane.room(30, noWake)).toBe(200 - lane.busy);
  });

  it('ramps up when its circuit closes again after its probes', () => {
    const lane = new Lane(
      { kind: 'sms', provider: provider('http') },
      'primary',
      { concurrency: 200, perSecond: null },
      () => {},
    );
    open(lane, 0);
    const probing = COOL_DOWN_MS + 1;
    expect(lane.state(probing)).toBe('half-open');
    for (let i = 0; i < PROBES; i++) {
      lane.take(1, probing);
      lane.ended(false, probing);
    }
    expect(lane.state(probing)).toBe('closed');
    expect(lane.room(probing, noWake)).toBe(RAMP_FIRST);
  });

  it('counts timeouts of attempts started together as one failure, and those started apart each', () => {
    const lane = new Lane(
      { kind: 'sms', provider: provider('http') },
      'primary',
      { concurrency: 200, perSecond: null },
      () => {},
    );
    // Forty started in one pass, all timing out ten seconds later: one failure, the circuit closed.
    lane.take(40, 0);
    for (let i = 0; i < 40; i++) lane.ended(true, 10_000 + i, i % 3, true);
    expect(lane.state(10_100)).toBe('closed');
    // Started apart, each counts: five in a row open it.
    for (let i = 1; i <= FAILURES_IN_A_ROW; i++) {
      lane.take(1, 10_000 + i * 1000);
      lane.ended(true, 20_000 + i * 1000, 10_000 + i * 1000, true);
    }
    expect(lane.state(20_000 + FAILURES_IN_A_ROW * 1000)).toBe('open');
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

// --- the SQL, on each database -----------------------------------------------------------------

/** A recorded call, whatever it was: the outbox's tests are about its deliveries. */
const call = (overrides: Partial<NewCall> = {}): NewCall => callRow(overrides);

describe.each(DIALECTS)('the outbox on %s', (dialect) => {
  let store: Store;
  let outbox: OutboxSql;
  let deliveries: DeliveryRepository;
  let recorder: TestStores['recorder'];
  let another: TestStores['another'];
  let stores: TestStores;
  const cleanup: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    stores = await openTestStoresOn(dialect);
    store = stores.store;
    deliveries = stores.outbox.deliveries;
    recorder = stores.recorder;
    another = stores.another;
    outbox = createOutboxSql(store, testSealer());
  });

  afterEach(async () => {
    for (const step of cleanup.splice(0)) await step();
    await stores.close();
  });

  /** Claims for the `log` provider's lane: SMS first, then pushes, up to `limit` in all. */
  async function claim(
    now: number,
    limit: number,
    leaseUntil: number,
    on: Store = store,
  ): Promise<Claimed[]> {
    const sqlOf = on === store ? outbox : createOutboxSql(on, testSealer());
    const request = { now, leaseUntil, routedTo: ['log'], provider: 'log', instance: on.instance };
    const got = await sqlOf.claimDue({ ...request, limit, kind: 'sms' });
    return got.concat(await sqlOf.claimDue({ ...request, limit: limit - got.length, kind: 'push' }));
  }

  it('claim: due deliveries once each, with an attempt (and its provider) written before the send', async () => {
    await recorder.record(call(), [sms(), sms(), push()]);
    const now = Date.now();
    const first = await claim(now, 2, now + 30_000);
    const second = await claim(now, 5, now + 30_000);
    expect(first).toHaveLength(2);
    expect(second).toHaveLength(1);
    const claimed = [...first, ...second];
    expect(new Set(claimed.map((c) => c.delivery.id)).size).toBe(3);
    for (const c of claimed) {
      expect(c.delivery).toMatchObject({
        status: 'sending',
        attempts: 1,
        lease_until: now + 30_000,
        leased_by: store.instance,
      });
      const attempts = await deliveries.attemptsOf(c.delivery.id);
      expect(attempts).toEqual([
        expect.objectContaining({ id: c.attemptId, started_at: now, outcome: null, provider: 'log' }),
      ]);
    }
    expect(await claim(now, 5, now + 30_000)).toEqual([]);
  });

  it('claim: only what is routed to the lane, and marks it with the provider the attempt goes to', async () => {
    await recorder.record(call(), [
      { ...sms(), provider: 'http' },
      { ...sms(), provider: 'twilio' },
    ]);
    const now = Date.now();
    const request = {
      now,
      leaseUntil: now + 30_000,
      kind: 'sms' as const,
      instance: store.instance,
      limit: 5,
    };
    expect(await outbox.claimDue({ ...request, routedTo: ['log'], provider: 'log' })).toEqual([]);
    // The fallback taking over the primary's: both now go to `twilio-fallback`.
    const got = await outbox.claimDue({
      ...request,
      routedTo: ['twilio-fallback', 'http'],
      provider: 'twilio-fallback',
    });
    expect(got.map((c) => c.delivery.provider)).toEqual(['twilio-fallback']);
    const attempts = await deliveries.attemptsOf(got[0]?.delivery.id ?? 0);
    expect(attempts.map((a) => a.provider)).toEqual(['twilio-fallback']);
  });

  it('claim in the call commit while there is room, queue the rest, and give slots back when the commit fails', async () => {
    const taken: Claimed[] = [];
    let room = 2;
    const released: string[] = [];
    const lane = { id: 'log', kind: 'sms' } as Lane;
    const data = tempDataDir();
    const fresh = dialect === 'postgres' ? await freshPostgres() : undefined;
    const own = await openStore({
      dataDir: data.dir,
      synchronous: 'NORMAL',
      databaseUrl: fresh?.url,
      owners: [OUTBOX_TABLES],
    });
    cleanup.unshift(async () => {
      await own.close();
      await fresh?.drop();
      data.remove();
    });
    const enqueue = createEnqueue({
      store: own,
      sealer: testSealer(),
      leaseMs: 30_000,
      dispatcher: {
        reserve: () => (room-- > 0 ? lane : undefined),
        release: (l) => released.push(l.id),
        take: (claimed) => taken.push(...claimed.map((c) => c.claimed)),
        mayBeDue() {},
        // Nothing finished waits to be recorded in this store's commits.
        recordFinishedIn: () => undefined,
        takeFinished: () => undefined,
      },
    });
    const recordOwn = createCallRecorder({ store: own, enqueue });
    const ownDeliveries = createDeliveryRepository(own.db, own.dialect);
    const before = Date.now();
    const id = await recordOwn.record(call(), [sms(), push(), sms('+447700900999')]);
    // Claimed in the commit: sending, its attempt written, before anyone was told.
    expect(taken.map((c) => [c.delivery.call_id, c.delivery.kind, c.delivery.status])).toEqual([
      [id, 'sms', 'sending'],
      [id, 'push', 'sending'],
    ]);
    for (const c of taken) {
      const row = await ownDeliveries.findById(c.delivery.id);
      expect(row).toMatchObject({ status: 'sending', attempts: 1, leased_by: own.instance });
      expect(row?.lease_until).toBeGreaterThanOrEqual(before + 30_000);
      expect(c.delivery).toEqual(row);
      expect(await ownDeliveries.attemptsOf(c.delivery.id)).toEqual([
        expect.objectContaining({ id: c.attemptId, outcome: null, provider: 'log' }),
      ]);
    }
    // No room left: the third is queued, for a claim pass.
    const ownSql = createOutboxSql(own, testSealer());
    const rest = await ownSql.claimDue({
      now: Date.now(),
      limit: 5,
      leaseUntil: Date.now() + 30_000,
      kind: 'sms',
      routedTo: ['log'],
      provider: 'log',
      instance: own.instance,
    });
    expect(rest.map((c) => c.delivery.recipient)).toEqual(['+447700900999']);
    // An auth code already past its validity is never claimed.
    room = 5;
    await recordOwn.record(call(), [sms('+447700900111', before - 1)]);
    expect(taken).toHaveLength(2);
    // A commit that fails after a slot was taken (here the batch's second delivery, past its
    // validity so never claimed, cannot be inserted) gives its slots back.
    const broken = { ...sms('+447700900111', before - 1), recipient: null as never };
    const batch = [recordOwn.record(call(), [sms()]), recordOwn.record(call(), [broken])];
    for (const recorded of batch) await expect(recorded).rejects.toThrow();
    expect(released).toEqual(['log']);
    expect(taken).toHaveLength(2);
  });

  it('sent and retry: settles a sent SMS (its sealed text destroyed), reschedules a transient failure', async () => {
    await recorder.record(call(), [sms(), sms()]);
    const now = Date.now();
    const [a, b] = await claim(now, 2, now + 30_000);
    if (!a || !b) throw new Error('not claimed');
    await outbox.finish([
      { claimed: a, now, result: { outcome: 'sent', providerId: 'SM1', response: '{"sid":"SM1"}' } },
      {
        claimed: b,
        now,
        result: { outcome: 'transient', error: 'busy', status: 503, retryAt: now + 5000, retryAfterMs: 5000 },
      },
    ]);
    const sent = await deliveries.findById(a.delivery.id);
    expect(sent).toMatchObject({
      status: 'sent',
      provider_id: 'SM1',
      sent_at: now,
      lease_until: null,
      leased_by: null,
    });
    expect(JSON.parse(sent?.payload ?? '{}')).toEqual({ maskedText: 'Your code is ******' });
    expect(sent?.secret).toBeNull();
    const later = await deliveries.findById(b.delivery.id);
    expect(later).toMatchObject({ status: 'pending', next_attempt_at: now + 5000, last_error: 'busy' });
    // Still to be sent: its text is kept, sealed, never in the payload.
    expect(JSON.parse(later?.payload ?? '{}')).toEqual({ maskedText: 'Your code is ******' });
    expect(later?.secret).toMatch(/^v1\./);
    expect(later?.secret).not.toContain('123456');
    expect(outbox.openText(later as NonNullable<typeof later>)).toBe('Your code is 123456');
    expect(await deliveries.attemptsOf(b.delivery.id)).toEqual([
      expect.objectContaining({ outcome: 'transient', status: 503, retry_after_ms: 5000, finished_at: now }),
    ]);
    // A report is the provider's about its own message: sent through `log`, not Twilio's SM1.
    expect(await deliveries.recordProviderStatus('twilio', 'SM1', 'delivered', now)).toBe(false);
    expect(await deliveries.recordProviderStatus('log', 'SM1', 'delivered', now)).toBe(true);
    expect(await deliveries.recordProviderStatus('log', 'SM-unknown', 'delivered', now)).toBe(false);
    expect(await deliveries.outbox(now + 6000)).toEqual({ due: 1, oldestDueAt: now + 5000 });
    // Sent by the `log` provider these tests claim for: `logged`.
    expect(await createDeliveryRollups(store.db, store.dialect).stateCounts()).toMatchObject({
      sent: 0,
      logged: 1,
      pending: 1,
      sending: 0,
    });
  });

  it('retry with a failover: the next try goes to the other provider, due at once', async () => {
    await recorder.record(call(), [sms()]);
    const now = Date.now();
    const [a] = await claim(now, 1, now + 30_000);
    if (!a) throw new Error('not claimed');
    await outbox.finish([
      {
        claimed: a,
        now,
        result: {
          outcome: 'transient',
          error: 'refused',
          status: 503,
          retryAt: now,
          nextProvider: 'twilio-fallback',
        },
      },
    ]);
    expect(await deliveries.findById(a.delivery.id)).toMatchObject({
      status: 'pending',
      provider: 'twilio-fallback',
      next_attempt_at: now,
    });
  });

  it('hedge: a second attempt under the same claim, recorded first; the other attempt, recorded alone, changes nothing', async () => {
    await recorder.record(call(), [sms('+447700900123', Date.now() + 60_000)]);
    const now = Date.now();
    const [first] = await claim(now, 1, now + 30_000);
    if (!first) throw new Error('not claimed');
    const request = { provider: 'twilio-fallback', now: now + 10, leaseUntil: now + 40_000 };
    // Only while this instance's claim holds it.
    expect(
      await outbox.hedge({
        ...request,
        delivery: { ...first.delivery, attempts: 2 },
        instance: store.instance,
      }),
    ).toBeUndefined();
    expect(await outbox.hedge({ ...request, delivery: first.delivery, instance: 'another' })).toBeUndefined();
    const hedged = await outbox.hedge({ ...request, delivery: first.delivery, instance: store.instance });
    expect(hedged?.delivery).toMatchObject({
      status: 'sending',
      attempts: 2,
      provider: 'twilio-fallback',
      lease_until: now + 40_000,
      leased_by: store.instance,
    });
    if (!hedged) throw new Error('not hedged');
    expect((await deliveries.attemptsOf(first.delivery.id)).map((a) => [a.provider, a.outcome])).toEqual([
      ['log', null],
      ['twilio-fallback', null],
    ]);
    const sent = { outcome: 'sent', response: 'ok' } as const;
    await outbox.finish([
      {
        claimed: hedged,
        now: now + 20,
        result: sent,
        delivery: { result: sent, unsureProvider: 'log' },
      },
    ]);
    // The first attempt's late end: recorded, the delivery left as it is.
    const late = { outcome: 'transient', error: 'no answer', retryAt: undefined, unsure: true } as const;
    await outbox.finish([{ claimed: first, now: now + 30, result: late, delivery: 'leave' }]);
    expect(await deliveries.findById(first.delivery.id)).toMatchObject({
      status: 'sent',
      provider: 'twilio-fallback',
      unsure_provider: 'log',
      attempts: 2,
      sent_at: now + 20,
      secret: null,
    });
    expect((await deliveries.attemptsOf(first.delivery.id)).map((a) => [a.provider, a.outcome])).toEqual([
      ['log', 'transient'],
      ['twilio-fallback', 'sent'],
    ]);
  });

  it('interrupt: a claim whose lease ran out is due again; the late finish of the old claim settles nothing', async () => {
    await recorder.record(call(), [sms()]);
    const now = Date.now();
    const [old] = await claim(now, 1, now + 1000);
    if (!old) throw new Error('not claimed');
    expect(await outbox.recover(now + 500)).toBe(0);
    expect(await outbox.recover(now + 1500, { except: new Set([old.delivery.id]) })).toBe(0);
    expect(await outbox.recover(now + 1500)).toBe(1);
    expect(await deliveries.attemptsOf(old.delivery.id)).toEqual([
      expect.objectContaining({ outcome: 'interrupted' }),
    ]);
    const [again] = await claim(now + 1500, 1, now + 60_000);
    expect(again?.delivery).toMatchObject({ id: old.delivery.id, attempts: 2 });
    await outbox.finish([
      { claimed: old, now: now + 1600, result: { outcome: 'permanent', error: 'late', retryAt: undefined } },
    ]);
    expect(await deliveries.findById(old.delivery.id)).toMatchObject({
      status: 'sending',
      attempts: 2,
    });
    if (!again) throw new Error('not claimed');
    await outbox.finish([{ claimed: again, now: now + 1700, result: { outcome: 'sent', response: 'ok' } }]);
    expect(await deliveries.findById(old.delivery.id)).toMatchObject({ status: 'sent' });
    const attempts = await deliveries.attemptsOf(old.delivery.id);
    expect(attempts.map((a) => a.outcome)).toEqual(['interrupted', 'sent']);
  });

  it('claim and interrupt: a delivery queued long ago and still on its way is taken like the others', async () => {
    // On PostgreSQL both read only the partitions from the oldest delivery on its way on.
    expect(await claim(Date.now(), 5, Date.now() + 1000)).toEqual([]);
    await recorder.record(call(), [sms(), push()]);
    const [old] = await deliveries.search({ kind: 'sms' }, { limit: 1 });
    if (!old) throw new Error('no SMS queued');
    const longAgo = Date.now() - 40 * 86_400_000;
    await store.db.updateTable('deliveries').set({ created_at: longAgo }).where('id', '=', old.id).execute();
    const now = Date.now();
    const claimed = await claim(now, 5, now + 1000);
    expect(claimed.map((c) => c.delivery.created_at).sort()).toEqual([longAgo, expect.any(Number)]);
    expect(await outbox.recover(now + 1500)).toBe(2);
    expect(await deliveries.findById(old.id)).toMatchObject({ status: 'pending', attempts: 1 });
  });

  it('expire, forget, resend and due-now: codes past their validity, dead ones, pushNoti', async () => {
    const queued = Date.now();
    await recorder.record(call(), [
      sms('+447700900001', queued + 1000),
      sms('+447700900002', queued + 1000),
      push(),
    ]);
    const now = Date.now();
    const claimed = await claim(now, 3, now + 30_000);
    const byRecipient = new Map(claimed.map((c) => [c.delivery.recipient, c]));
    const dead = byRecipient.get('+447700900002');
    const deadPush = byRecipient.get('school-a');
    const pending = byRecipient.get('+447700900001');
    if (!dead || !deadPush || !pending) throw new Error('not claimed');
    await outbox.finish([
      { claimed: dead, now, result: { outcome: 'permanent', error: 'bad number', retryAt: undefined } },
      { claimed: deadPush, now, result: { outcome: 'permanent', error: 'no topic', retryAt: undefined } },
      { claimed: pending, now, result: { outcome: 'transient', error: 'busy', retryAt: now + 1000 } },
    ]);
    // Dead, but valid: it can still be resent, so it keeps its sealed text.
    expect((await deliveries.findById(dead.delivery.id))?.secret).not.toBeNull();
    expect(await outbox.expireStale(queued + 2000)).toBe(1);
    expect(await deliveries.findById(pending.delivery.id)).toMatchObject({
      status: 'expired',
      secret: null,
    });
    const forgotten = await deliveries.findById(dead.delivery.id);
    expect(forgotten).toMatchObject({ status: 'dead', secret: null });
    // The SMS lost its text: only the push can be sent again.
    expect(await outbox.resend(dead.delivery.id, now)).toBe(false);
    expect(await outbox.resendAllDead(now)).toBe(1);
    expect(await deliveries.findById(deadPush.delivery.id)).toMatchObject({
      status: 'pending',
      attempts: 0,
    });
    expect(await deliveries.pendingPushes()).toBe(1);
    expect(await outbox.makePushesDue(now + 5)).toBe(1);
  });

  it('never hands one delivery to two instances claiming at once', async () => {
    await recorder.record(
      call(),
      Array.from({ length: 300 }, () => sms()),
    );
    const stores =
      dialect === 'postgres' ? [store, (await another()).store, (await another()).store] : [store];
    const now = Date.now();
    const claims = await Promise.all(
      Array.from({ length: 30 }, (_, i) => claim(now, 13, now + 30_000, stores[i % stores.length] as Store)),
    );
    const ids = claims.flat().map((c) => c.delivery.id);
    expect(ids).toHaveLength(300);
    expect(new Set(ids).size).toBe(300);
  });

  it.runIf(dialect === 'postgres')(
    "interrupt: another instance's claims once it has gone silent, however long their lease; never a live one's",
    async () => {
      const other = await another();
      await recorder.record(call(), [sms(), sms()]);
      const now = Date.now();
      // The other instance claims both, with leases of an hour.
      const held = await claim(now, 2, now + 3_600_000, other.store);
      expect(held).toHaveLength(2);
      // It announces itself (its watch connection, every 2 s): its claims are its own.
      await waitUntil(async () => (await instanceSeen(other.store.instance)) !== undefined);
      expect(await outbox.recover(now, { silentAfterMs: 6000, instance: store.instance })).toBe(0);
      // Silent for longer than 6 s (as if killed): taken over at once, lease or not.
      await other.close();
      await store.db
        .insertInto('instances')
        .values({ id: other.store.instance, started_at: now - 60_000, seen_at: now - 7000 })
        .onConflict((oc) => oc.column('id').doUpdateSet({ seen_at: now - 7000 }))
        .execute();
      expect(await outbox.recover(Date.now(), { silentAfterMs: 6000, instance: store.instance })).toBe(2);
      expect((await createDeliveryRollups(store.db, store.dialect).stateCounts()).pending).toBe(2);
      // Its own claims are never another's silent ones.
      const mine = await claim(Date.now(), 2, Date.now() + 3_600_000);
      await sql`UPDATE instances SET seen_at = 0 WHERE id = ${store.instance}`.execute(store.db);
      expect(await outbox.recover(Date.now(), { silentAfterMs: 6000, instance: store.instance })).toBe(0);
      expect(mine).toHaveLength(2);
    },
  );

  it.runIf(dialect === 'postgres')(
    'releases what it holds at a clean stop, for another instance to send',
    async () => {
      await recorder.record(call(), [sms()]);
      const now = Date.now();
      const [held] = await claim(now, 1, now + 3_600_000);
      expect(await outbox.releaseHeldBy(store.instance, now + 1)).toBe(1);
      expect(await deliveries.findById(held?.delivery.id ?? 0)).toMatchObject({
        status: 'pending',
        leased_by: null,
      });
      expect((await deliveries.attemptsOf(held?.delivery.id ?? 0)).map((a) => a.outcome)).toEqual([
        'interrupted',
      ]);
    },
  );

  it.runIf(dialect === 'sqlite')(
    'commits calls with FULL durability around the outbox bookkeeping that does not wait for the disk',
    async () => {
      const data = tempDataDir();
      const instance = await openTestInstance({ dataDir: data.dir, synchronous: 'FULL' });
      const full = instance.store;
      try {
        const level = async () =>
          (await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(full.db)).rows[0]?.synchronous;
        expect(await level()).toBe(2);
        await instance.recorder.record(call(), [sms(), sms()]);
        const now = Date.now();
        const fullSql = createOutboxSql(full, testSealer());
        const claimed = await fullSql.claimDue({
          now,
          limit: 5,
          leaseUntil: now + 30_000,
          kind: 'sms',
          routedTo: ['log'],
          provider: 'log',
          instance: full.instance,
        });
        await fullSql.finish(
          claimed.map((c) => ({ claimed: c, now, result: { outcome: 'sent', response: 'ok' } as const })),
        );
        // FULL again for what follows (a call's commit waits for the disk).
        expect(await level()).toBe(2);
        const { db, dialect } = instance.store;
        expect((await createDeliveryRollups(db, dialect).stateCounts()).logged).toBe(2);
      } finally {
        await instance.close();
        data.remove();
      }
    },
  );

  async function instanceSeen(id: string): Promise<number | undefined> {
    const row = await store.db
      .selectFrom('instances')
      .select('seen_at')
      .where('id', '=', id)
      .executeTakeFirst();
    return row?.seen_at;
  }
});
