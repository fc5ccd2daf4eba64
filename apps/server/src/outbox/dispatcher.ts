import type { FastifyBaseLogger } from 'fastify';
import type { SendResult } from '../providers/types.js';
import { SealedValueError } from '../secrets/sealer.js';
import { isConnectionError, isUnavailableError, type SqliteTx, type Store } from '../store/index.js';
import { nextTry } from './backoff.js';
import { FinishedAttempts, type RecordedInCommit } from './finished-attempts.js';
import { HEDGE_RECHECK_MS, hedgeable, Race } from './hedge.js';
import type { Lane, Lanes } from './lanes.js';
import { parseDeliveryPayload } from './payload.js';
import type { DeliveryKind } from './schema.js';
import { type AttemptResult, type Claimed, type OutboxSql, settlementOf } from './sql.js';

/**
 * After the database comes back, leases that ran out meanwhile are not taken over for this long:
 * every instance first records the attempts it finished while it could not (docs/monitoring.md#faults).
 */
export const RECOVERY_GRACE_MS = 5000;
/** While the database cannot take what the dispatcher has to write, the log says so at most this often. */
const TROUBLE_LOG_EVERY_MS = 10_000;
/** A provider's 429 pauses its lane for its Retry-After: 1 s without one, a minute at most. */
const PAUSE_DEFAULT_MS = 1000;
const PAUSE_MAX_MS = 60_000;

export interface DispatcherOptions {
  readonly store: Store;
  readonly sql: OutboxSql;
  readonly lanes: Lanes;
  /** After this many attempts a delivery is dead. */
  readonly maxAttempts: number;
  /** Backoff: base × 2^(attempt−1), capped, with full jitter (backoff.ts). */
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** How often due retries are looked for, and the sweep runs, when nothing wakes the dispatcher. */
  readonly pollMs: number;
  /** How long a claimed delivery stays `sending` before it counts as interrupted. */
  readonly leaseMs: number;
  /** PostgreSQL: another instance silent this long has its claims taken over. */
  readonly silentAfterMs: number;
  /**
   * A code's attempt on the primary SMS provider not answered within this long is sent by the
   * fallback too (hedge.ts); null: never.
   */
  readonly hedgeAfterMs?: number | null;
  readonly log: FastifyBaseLogger;
  /** Sent by `provider` while another's attempt ended unsure, or had not ended (outbox/index.ts). */
  readonly onSentAfterUnsure?: (kind: DeliveryKind, provider: string, unsure: string) => void;
  readonly random?: () => number;
}

/**
 * Sends queued deliveries through their providers' lanes (docs/outbox.md). Each
 * attempt is recorded before the provider is called (with the delivery's idempotency key), so a
 * crash mid-send loses nothing and a resend after one shows as an `interrupted` attempt.
 */
export class Dispatcher {
  readonly #o: DispatcherOptions;
  readonly #random: () => number;
  readonly #store: Store;
  readonly #sql: OutboxSql;
  readonly #finished: FinishedAttempts;
  readonly #inflight = new Set<Promise<void>>();
  #running = false;
  #begun = false;
  #starting: Promise<void> | undefined;
  #woken = false;
  #passing: Promise<void> | undefined;
  #poll: NodeJS.Timeout | undefined;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = 0;
  #idleWaiters: (() => void)[] = [];
  #lastTroubleLog = 0;

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#random = options.random ?? Math.random;
    this.#store = options.store;
    this.#sql = options.sql;
    this.#finished = new FinishedAttempts(options.sql, {
      recorded: (batch) => {
        // A retry is claimed when it comes due.
        let retryAt = Number.POSITIVE_INFINITY;
        for (const finished of batch) {
          const result = settlementOf(finished);
          if (result && result.outcome !== 'sent' && result.retryAt !== undefined)
            retryAt = Math.min(retryAt, result.retryAt);
        }
        if (retryAt !== Number.POSITIVE_INFINITY) this.#wakeAt(retryAt);
      },
      failed: (err, waiting) =>
        this.#trouble(err, 'could not record finished attempts: kept, and recorded again shortly', {
          attempts: waiting,
        }),
      drained: () => {
        if (this.#inflight.size === 0 && this.#idleWaiters.length > 0) this.wake();
      },
    });
  }

  get running(): boolean {
    return this.#running;
  }

  /**
   * Starts once the database has been reached: recovers what a previous process left `sending`,
   * then sends, sweeping every `pollMs`.
   */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    const store = this.#store;
    const sql = this.#sql;
    this.#starting = store.whenReady(
      async () => {
        this.#begun = true;
        // An embedded database has one process: whatever is still `sending` at start was left by
        // a process that stopped mid-attempt, whatever its lease said. On PostgreSQL other
        // instances may be mid-attempt: only expired leases and silent instances' are taken over.
        try {
          const recovered = await sql.recover(Date.now(), this.#recoverOptions(store.dialect === 'sqlite'));
          if (recovered > 0) {
            this.#o.log.warn({ recovered }, 'deliveries interrupted by a stop are due again');
            this.#rampUp();
          }
        } catch (err) {
          this.#trouble(err, 'could not recover interrupted deliveries');
        }
        if (!this.#running) return;
        store.availability.events.on('up', this.#onUp);
        this.#poll = setInterval(() => void this.#sweep(), this.#o.pollMs);
        this.#poll.unref();
        this.wake();
      },
      (err) => this.#o.log.error({ err }, 'the dispatcher could not start'),
    );
  }

  /**
   * Stops claiming, waits for the attempts under way and records them, then (PostgreSQL) hands
   * back whatever this instance still holds, for another to send.
   */
  async stop(): Promise<void> {
    this.#running = false;
    // Waited for once begun; before that it waits for a database that may never come.
    if (this.#begun) await this.#starting;
    if (this.#poll) clearInterval(this.#poll);
    if (this.#timer) clearTimeout(this.#timer);
    this.#store.availability.events.off('up', this.#onUp);
    await this.#passing;
    // A hedge recorded meanwhile adds its attempt: waited for too.
    while (this.#inflight.size > 0) await Promise.all(this.#inflight);
    // One last try; what still cannot be recorded is taken back by a sweep once its lease runs
    // out (or this instance is silent), and sent again with the same idempotency key.
    if (!(await this.#finished.flush()))
      this.#o.log.error({ attempts: this.#finished.waiting }, 'finished attempts left unrecorded at stop');
    else if (this.#begun && this.#store.dialect === 'postgres') {
      try {
        const released = await this.#sql.releaseHeldBy(this.#store.instance, Date.now());
        if (released > 0) this.#o.log.info({ released }, 'deliveries still held handed back at stop');
      } catch (err) {
        this.#trouble(err, 'could not hand back the deliveries held at stop');
      }
    }
    for (const resolve of this.#idleWaiters) resolve();
    this.#idleWaiters = [];
  }

  /** Looks for due deliveries now. */
  wake(): void {
    if (!this.#running) return;
    this.#woken = true;
    if (this.#passing) return;
    this.#passing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#passes())
      .finally(() => {
        this.#passing = undefined;
        if (this.#woken && this.#running) this.wake();
      });
  }

  /** Something may be due (of `kind`, or of every kind): the next pass looks. */
  mayBeDue(kind?: DeliveryKind): void {
    for (const lane of this.#o.lanes.all) if (kind === undefined || lane.kind === kind) lane.markDue();
    this.wake();
  }

  /** pushNoti: every pending push due now, retries included; returns how many. */
  async dispatchPushesNow(): Promise<number> {
    try {
      const count = await this.#sql.makePushesDue(Date.now());
      this.mayBeDue('push');
      return count;
    } catch (err) {
      this.#trouble(err, 'could not make pushes due');
      return 0;
    }
  }

  /** Resolves once nothing is due or under way (for tests and shutdown). */
  idle(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#idleWaiters.push(resolve);
      this.mayBeDue();
    });
  }

  // --- the hand-off: deliveries claimed in their call's own commit (SQLite) ------------------

  /** A slot for a delivery queued now, in its call's commit; undefined: leave it pending. */
  reserve(kind: DeliveryKind, provider: string, now: number): Lane | undefined {
    if (!this.#running) return undefined;
    const lane = this.#o.lanes.forNew(kind, provider, now, (at) => this.#wakeAt(at));
    lane?.take(1, now);
    return lane;
  }

  /** Slots taken for a commit that failed are free again. */
  release(lane: Lane): void {
    lane.giveBack(1);
    this.wake();
  }

  /** Deliveries claimed in a commit, once it is durable: sent at once. */
  take(claimed: readonly { lane: Lane; claimed: Claimed }[]): void {
    for (const c of claimed) {
      // Committed while the dispatcher stopped: nothing is sent after a stop. The delivery stays
      // `sending` with its attempt open, and the next start takes it up as interrupted.
      if (this.#running) this.#launch(c.lane, c.claimed);
      else c.lane.giveBack(1);
    }
  }

  /**
   * Inside a call's durable commit (SQLite): the attempts finished since the last one are recorded
   * in it too, rather than in a commit of their own (finished-attempts.ts).
   */
  recordFinishedIn(tx: SqliteTx): RecordedInCommit | undefined {
    return this.#finished.recordIn(tx);
  }

  /**
   * The attempts finished since the last commit, taken to be recorded in a call's durable commit by
   * the caller (PostgreSQL: the recorder's one statement, enqueue.ts), who says how it ended.
   */
  takeFinished(): ReturnType<FinishedAttempts['take']> {
    return this.#finished.take();
  }

  // --- passes ----------------------------------------------------------------------------

  async #passes(): Promise<void> {
    while (this.#woken) {
      this.#woken = false;
      await this.#pass();
    }
  }

  /** One pass: each lane claims what is due for it, up to the room it has. */
  async #pass(): Promise<void> {
    const store = this.#store;
    // While the database is away nothing can be claimed: the pass after it is back does.
    if (!this.#running || !store.availability.status().up) return;
    const now = Date.now();
    let claimed = 0;
    /** A claim failed: nothing can be said of what is due, so nobody waiting for idle is told. */
    let failed = false;
    for (const lane of this.#o.lanes.all) {
      if (!lane.due) continue;
      const n = lane.room(now, (at) => this.#wakeAt(at));
      if (n <= 0) continue;
      let got: Claimed[] = [];
      const marks = lane.dueMarks;
      try {
        got = await this.#sql.claimDue({
          now,
          limit: n,
          leaseUntil: now + this.#o.leaseMs,
          kind: lane.kind,
          routedTo: this.#o.lanes.routedTo(lane, now),
          provider: lane.id,
          instance: store.instance,
        });
        // Nothing more was due when the query ran; unless marked due since (a commit during it).
        if (got.length < n && lane.dueMarks === marks) lane.due = false;
      } catch (err) {
        failed = true;
        this.#trouble(err, 'dispatcher pass failed');
      }
      lane.take(got.length, now);
      for (const c of got) this.#launch(lane, c);
      claimed += got.length;
    }
    // Asked again during the pass (a call committed, idle() was called): the pass began before,
    // with an earlier `now`, and cannot answer for it; the pass that follows does.
    if (!failed && !this.#woken && claimed === 0 && this.#inflight.size === 0 && !this.#finished.busy) {
      for (const resolve of this.#idleWaiters) resolve();
      this.#idleWaiters = [];
    }
  }

  /** Starts the attempt of a claimed delivery, its slot in `lane` already taken. */
  #launch(lane: Lane, c: Claimed): void {
    const hedgeAfterMs = this.#o.hedgeAfterMs ?? null;
    const fallback = hedgeAfterMs === null ? undefined : this.#o.lanes.hedgeFrom(lane);
    let race: Race | undefined;
    if (hedgeAfterMs !== null && hedgeable(lane, c, fallback, this.#o.maxAttempts)) {
      race = new Race(lane, c, fallback);
      this.#armHedge(race, hedgeAfterMs);
    }
    this.#track(c, () => this.#attempt(lane, c, race));
  }

  /** An attempt under way: its delivery held, and waited for by idle() and stop(). */
  #track(c: Claimed, attempt: () => Promise<void>): void {
    this.#finished.hold(c.delivery.id);
    const done: Promise<void> = attempt()
      .catch((err: unknown) => {
        this.#finished.drop(c.delivery.id);
        this.#o.log.error({ err, delivery: c.delivery.id }, 'delivery attempt failed');
      })
      .finally(() => {
        this.#inflight.delete(done);
        this.wake();
      });
    this.#inflight.add(done);
  }

  async #attempt(lane: Lane, claimed: Claimed, race?: Race): Promise<void> {
    const { delivery } = claimed;
    const startedAt = Date.now();
    const result = await this.#send(lane, claimed);
    const now = Date.now();
    this.#answered(lane, result, now, startedAt);
    // Hedged: the delivery is the race's to settle, whichever of its two attempts this is.
    if (race && (await race.joined(lane))) {
      this.#endRaced(lane, claimed, result, now, race);
      return;
    }
    const outcome = this.#outcome(lane, claimed, result, now);
    this.#finished.add({ claimed, now, result: outcome });
    if (result.ok) this.#sentAfterUnsure(delivery, lane, delivery.unsure_provider);
    this.#logAttempt(lane, claimed, outcome);
  }

  /** A provider answered (or timed out): its lane's circuit, ramp and pause learn of it. */
  #answered(lane: Lane, result: SendResult, now: number, startedAt: number): void {
    // The circuit counts what says the provider is not working: a transient failure (a timeout,
    // a network error, a 5xx or 429), or refused credentials. One message's refusal does not.
    const broken =
      !result.ok && (result.kind === 'transient' || result.status === 401 || result.status === 403);
    const unknown = !result.ok && result.kind === 'transient' && result.taken !== 'no';
    lane.ended(broken, now, startedAt, unknown);
    if (!result.ok && result.status === 429) {
      // The provider says it is over its rate: its lane waits (Retry-After, else a second) before
      // anything more is sent to it, not just this delivery.
      lane.pause(now + Math.min(result.retryAfterMs ?? PAUSE_DEFAULT_MS, PAUSE_MAX_MS));
    }
  }

  /** Sent by `lane` while `unsure`'s attempt may have sent it too: counted, and said in the log. */
  #sentAfterUnsure(delivery: Claimed['delivery'], lane: Lane, unsure: string | null): void {
    if (unsure === null || unsure === lane.id) return;
    this.#o.onSentAfterUnsure?.(delivery.kind, lane.id, unsure);
    this.#o.log.info(
      { delivery: delivery.id, kind: delivery.kind, provider: lane.id, unsure },
      `sent by ${lane.id} while ${unsure} had not said whether it took it: it may arrive twice`,
    );
  }

  #logAttempt(lane: Lane, claimed: Claimed, outcome: AttemptResult, hedged?: boolean): void {
    const { delivery } = claimed;
    this.#o.log.info(
      {
        delivery: delivery.id,
        kind: delivery.kind,
        provider: lane.id,
        attempt: delivery.attempts,
        outcome: outcome.outcome,
        ...(outcome.outcome !== 'sent' && outcome.nextProvider ? { next: outcome.nextProvider } : {}),
        ...(hedged ? { hedged } : {}),
      },
      'delivery attempt',
    );
  }

  // --- the hedge (hedge.ts) ----------------------------------------------------------------

  #armHedge(race: Race, afterMs: number): void {
    race.timer = setTimeout(() => this.#hedge(race), afterMs);
    race.timer.unref();
  }

  /**
   * The primary has not answered in time: the code goes to the fallback too, if its lane has room
   * (its concurrency, rate and circuit: none while it is open), once its attempt is recorded.
   */
  #hedge(race: Race): void {
    race.timer = undefined;
    const now = Date.now();
    const { delivery } = race.claimed;
    const lane = race.fallback;
    if (!this.#running || !race.open) return;
    race.stall();
    // Every slot of the primary taken by attempts like this one: what waits for it goes to the fallback.
    if (race.primary.stalling) this.mayBeDue(lane.kind);
    if ((delivery.expires_at ?? 0) <= now) return;
    if (lane.room(now, (at) => this.#wakeAt(at)) <= 0) {
      if (lane.state(now) !== 'open') this.#armHedge(race, HEDGE_RECHECK_MS);
      return;
    }
    lane.take(1, now);
    race.recording = this.#sql
      .hedge({
        delivery,
        provider: lane.id,
        instance: this.#store.instance,
        now,
        leaseUntil: now + this.#o.leaseMs,
      })
      .then(
        (hedged) => {
          if (!hedged) {
            lane.giveBack(1);
            return undefined;
          }
          const c: Claimed =
            race.claimed.text === undefined ? hedged : { ...hedged, text: race.claimed.text };
          race.hedged = c;
          this.#track(c, () => this.#attempt(lane, c, race));
          return c;
        },
        (err: unknown) => {
          lane.giveBack(1);
          this.#trouble(err, 'could not record a hedge: the code waits for its primary');
          return undefined;
        },
      );
  }

  /**
   * One of a hedged code's attempts ended: recorded, and the delivery settled by the first that
   * sent it, or by the fallback's result once both failed (hedge.ts).
   */
  #endRaced(lane: Lane, claimed: Claimed, result: SendResult, now: number, race: Race): void {
    const own = attemptResult(result);
    const end = race.end(lane, result);
    // The delivery as the hedge left it (its attempt count, the fallback's provider).
    const row = (race.hedged as Claimed).delivery;
    if (end.kind === 'leave') {
      this.#finished.add({ claimed, now, result: own, delivery: 'leave' });
    } else if (end.kind === 'sent') {
      this.#finished.add({
        claimed: { delivery: { ...row, provider: lane.id }, attemptId: claimed.attemptId },
        now,
        result: own,
        delivery: { result: own, unsureProvider: end.unsure },
      });
      this.#sentAfterUnsure(row, lane, end.unsure ?? row.unsure_provider);
    } else {
      const fate = this.#outcome(race.fallback, race.hedged as Claimed, end.fallback, now);
      this.#finished.add({
        claimed: { delivery: row, attemptId: claimed.attemptId },
        now,
        result: own,
        delivery: { result: fate, unsureProvider: end.unsure },
      });
    }
    this.#logAttempt(lane, claimed, own, true);
  }

  async #send(lane: Lane, claimed: Claimed): Promise<SendResult> {
    const { delivery } = claimed;
    try {
      const payload = parseDeliveryPayload(delivery);
      const target = lane.target;
      if (target.kind === 'sms' && payload.kind === 'sms') {
        return await target.provider.send({
          to: delivery.recipient,
          text: claimed.text ?? this.#sql.openText(delivery),
          maskedText: payload.maskedText,
          idempotencyKey: delivery.idempotency_key,
        });
      }
      if (target.kind === 'push' && payload.kind === 'push') {
        return await target.provider.send({
          topic: delivery.recipient,
          title: payload.title,
          body: payload.body,
          data: payload.data,
          idempotencyKey: delivery.idempotency_key,
        });
      }
      return {
        ok: false,
        kind: 'permanent',
        error: `A ${delivery.kind} delivery reached the ${lane.id} lane.`,
      };
    } catch (err) {
      if (err instanceof SealedValueError) {
        // Sealed under another key (instances with different CODE_ENCRYPTION_KEYs): no retry helps.
        this.#o.log.error({ delivery: delivery.id }, err.message);
        return { ok: false, kind: 'permanent', error: err.message, taken: 'no' };
      }
      // Providers do not throw; if one does, the attempt is a transient failure, not a crash.
      this.#o.log.error({ err, delivery: delivery.id }, 'provider threw');
      return { ok: false, kind: 'transient', error: 'The provider failed unexpectedly.' };
    }
  }

  /**
   * What becomes of the delivery (docs/outbox.md): sent; after a sure refusal by the
   * primary, tried on the fallback at once; after a transient failure, tried again later on the
   * same provider (a fallback takes it over then if the primary's circuit has opened); else dead.
   */
  #outcome(lane: Lane, claimed: Claimed, result: SendResult, now: number): AttemptResult {
    const failure = attemptResult(result);
    if (failure.outcome === 'sent' || result.ok) return failure;
    const { attempts, expires_at } = claimed.delivery;
    const failover = result.taken === 'no' ? this.#o.lanes.failoverFrom(lane, now) : undefined;
    if (failover && attempts < this.#o.maxAttempts && (expires_at === null || expires_at > now)) {
      failover.markDue();
      return { ...failure, retryAt: now, nextProvider: failover.id };
    }
    const retryAt =
      result.kind === 'transient'
        ? nextTry({
            now,
            attempts,
            maxAttempts: this.#o.maxAttempts,
            retryAfterMs: result.retryAfterMs,
            expiresAt: expires_at,
            base: this.#o.retryBaseMs,
            max: this.#o.retryMaxMs,
            random: this.#random,
          })
        : undefined;
    return { ...failure, retryAt };
  }

  // --- the sweep -------------------------------------------------------------------------

  /** Expiry and the recovery of interrupted attempts, by one instance at a time. */
  async #sweep(): Promise<void> {
    const store = this.#store;
    const status = store.availability.status();
    if (!status.up) return;
    if (this.#finished.waiting > 0) this.#finished.retryNow();
    try {
      await store.exclusively('delivery-sweep', async () => {
        const now = Date.now();
        await this.#sql.expireStale(now);
        // Just back from an outage, every instance first records what it finished meanwhile.
        if (now - status.since < RECOVERY_GRACE_MS) return;
        // A lease runs out when an attempt outlived it; an instance goes silent when it died
        // (kill -9): its deliveries are due again, here or on another instance. What this
        // dispatcher holds stays.
        const recovered = await this.#sql.recover(now, this.#recoverOptions(false));
        if (recovered > 0) {
          this.#o.log.warn({ recovered }, 'deliveries of a stopped or silent attempt are due again');
          this.#rampUp();
        }
      });
    } catch (err) {
      this.#trouble(err, 'dispatcher sweep failed');
    }
    this.mayBeDue();
  }

  /**
   * Deliveries were taken over (a stop, a silent instance): the lanes release them at the pace
   * their providers answer (lanes.ts RAMP_FIRST), not all in one pass.
   */
  #rampUp(): void {
    for (const lane of this.#o.lanes.all) lane.ramp();
  }

  #recoverOptions(atStart: boolean) {
    const store = this.#store;
    return {
      ignoreLeases: atStart,
      except: this.#finished.held,
      instance: store.instance,
      ...(store.dialect === 'postgres' ? { silentAfterMs: this.#o.silentAfterMs } : {}),
    };
  }

  /** The database is back: what ended meanwhile is recorded first, then sending goes on. */
  readonly #onUp = () => {
    this.#finished.retryNow();
    this.mayBeDue();
  };

  // --- helpers ---------------------------------------------------------------------------

  /**
   * Wakes the dispatcher at `at` (a rate cap's next token, the end of a pause or a cool-down, a
   * retry's time), or sooner if already asked.
   */
  #wakeAt(at: number): void {
    if (this.#timer && this.#timerAt <= at) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.mayBeDue();
      },
      Math.max(1, at - Date.now()),
    );
    this.#timer.unref();
  }

  /**
   * Trouble the dispatcher rides out: the database away is an outage the store reports once as it
   * begins and ends (store/pg-watch.ts), so here it is debug; a full disk is logged once per
   * TROUBLE_LOG_EVERY_MS.
   */
  #trouble(err: unknown, message: string, extra: object = {}): void {
    if (!isUnavailableError(err)) {
      this.#o.log.error({ err, ...extra }, message);
      return;
    }
    if (isConnectionError(err)) {
      this.#o.log.debug({ reason: err instanceof Error ? err.message : String(err), ...extra }, message);
      return;
    }
    const now = Date.now();
    if (now - this.#lastTroubleLog < TROUBLE_LOG_EVERY_MS) return;
    this.#lastTroubleLog = now;
    this.#o.log.warn({ reason: err instanceof Error ? err.message : String(err), ...extra }, message);
  }
}

/** How an attempt ended, as its record says it; a failure with no next try of its own. */
function attemptResult(result: SendResult): AttemptResult {
  if (result.ok) return { outcome: 'sent', providerId: result.providerId, response: result.response };
  return {
    outcome: result.kind,
    error: result.error,
    status: result.status,
    response: result.response,
    retryAfterMs: result.retryAfterMs,
    unsure: result.kind === 'transient' && result.taken !== 'no',
    retryAt: undefined,
  };
}
