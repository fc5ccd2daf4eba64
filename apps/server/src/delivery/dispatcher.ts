import type { FastifyBaseLogger } from 'fastify';
import type { PushProvider, SendResult, SmsProvider } from '../providers/types.js';
import { SealedValueError } from '../secrets/sealer.js';
import {
  type AttemptResult,
  type Claimed,
  type DeliveryKind,
  type Handoff,
  isUnavailableError,
  parseDeliveryPayload,
  type Store,
} from '../store/index.js';

/**
 * After the database comes back, leases that ran out meanwhile are not taken over for this long:
 * every instance first records the attempts it finished while it could not (docs/operations.md#faults).
 */
export const RECOVERY_GRACE_MS = 5000;
/** While the database cannot take what the dispatcher has to write, the log says so at most this often. */
const TROUBLE_LOG_EVERY_MS = 10_000;
/** Finished attempts that could not be recorded are tried again after this long (or when the database is back). */
const RERECORD_MS = 1000;

/** How one provider kind is sent: how many at once, and how fast at most. */
export interface LaneOptions {
  /** Attempts under way at once (each is one request to the provider). */
  readonly concurrency: number;
  /** Sends started per second at most (the provider's rate limit); null: no cap. */
  readonly perSecond: number | null;
}

export interface DispatcherOptions {
  readonly store: Store;
  readonly sms: SmsProvider;
  readonly push: PushProvider;
  /** SMS and pushes go through different providers, each with its own concurrency and rate. */
  readonly lanes: Readonly<Record<DeliveryKind, LaneOptions>>;
  /** After this many attempts a delivery is dead. */
  readonly maxAttempts: number;
  /** Backoff: base × 2^(attempt−1), capped, with full jitter. */
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** How often due retries are looked for when nothing wakes the dispatcher. */
  readonly pollMs: number;
  /** How long a claimed delivery stays `sending` before it counts as interrupted. */
  readonly leaseMs: number;
  readonly log: FastifyBaseLogger;
  readonly random?: () => number;
}

export interface Dispatcher {
  /** Recovers attempts a previous process left unfinished, then starts sending. */
  start(): void;
  /** Stops claiming and waits for the attempts under way. */
  stop(): Promise<void>;
  /** Looks for due deliveries now (after a commit that queued some). */
  wake(): void;
  /** pushNoti: every pending push due now, retries included; returns how many. */
  dispatchPushesNow(): Promise<number>;
  /** Resolves once nothing is due or under way (for tests and shutdown). */
  idle(): Promise<void>;
}

/** The delay before retry `attempt + 1`: exponential with full jitter, never before Retry-After. */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  base: number,
  max: number,
  random: () => number,
): number {
  const backoff = Math.min(max, base * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.round(backoff / 2 + random() * (backoff / 2));
  return Math.max(jittered, retryAfterMs ?? 0);
}

/**
 * Sends queued deliveries through the providers with bounded concurrency. Each attempt is recorded
 * before the provider is called (with the delivery's idempotency key), so a crash mid-send loses
 * nothing and a resend after one is visible as an `interrupted` attempt.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { store, log } = options;
  const random = options.random ?? Math.random;
  const inflight = new Set<Promise<void>>();
  /** Per kind: what is under way, the rate cap's tokens, and a pause the provider asked for. */
  const lanes = (['sms', 'push'] as const).map((kind) => ({
    kind,
    ...options.lanes[kind],
    busy: 0,
    /**
     * Deliveries of this kind may be due in the outbox. False once a claim found fewer than it
     * asked for; true again when a commit leaves some pending, a retry comes due, or a sweep or
     * pushNoti runs. A lane fed by hand-offs then makes no empty claims as its slots free up.
     */
    due: true,
    tokens: options.lanes[kind].perSecond ?? 0,
    refilledAt: Date.now(),
    pausedUntil: 0,
  }));
  type Lane = (typeof lanes)[number];
  let timer: NodeJS.Timeout | undefined;
  let timerAt = 0;
  /**
   * Wakes the dispatcher at `at` (a rate cap's next token, the end of a provider's pause), or
   * sooner if already asked: one kind's long pause never delays the other kind's next token.
   */
  function wakeAt(at: number): void {
    if (timer && timerAt <= at) return;
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(
      () => {
        timer = undefined;
        mayBeDue();
      },
      Math.max(1, at - Date.now()),
    );
    timer.unref();
  }
  /** How many the lane may start now: free slots, within the rate cap and any pause. */
  function room(lane: Lane, now: number): number {
    if (lane.pausedUntil > now) {
      wakeAt(lane.pausedUntil);
      return 0;
    }
    const free = lane.concurrency - lane.busy;
    if (lane.perSecond === null) return free;
    lane.tokens = Math.min(lane.perSecond, lane.tokens + ((now - lane.refilledAt) / 1000) * lane.perSecond);
    lane.refilledAt = now;
    return Math.min(free, Math.floor(lane.tokens));
  }
  let running = false;
  let woken = false;
  /** The passes under way, if any. */
  let passing: Promise<void> | undefined;
  /** Start-up recovery, awaited by stop once begun. */
  let starting: Promise<void> | undefined;
  let begun = false;
  let poll: NodeJS.Timeout | undefined;
  let idleWaiters: (() => void)[] = [];
  /** Attempts that ended and are not recorded yet: recorded together, in one commit. */
  let finished: { claimed: Claimed; now: number; result: AttemptResult }[] = [];
  /**
   * Deliveries this dispatcher holds: an attempt under way, or finished and not yet recorded. Its
   * own sweep never takes them back, whatever their lease says: a finished attempt that could not
   * be recorded (the database unreachable, the disk full) is kept and recorded later, never sent
   * again.
   */
  const held = new Set<number>();
  let lastTroubleLog = 0;
  /** Logs trouble the dispatcher rides out (the database away): once per TROUBLE_LOG_EVERY_MS. */
  function trouble(err: unknown, message: string, extra: object = {}): void {
    if (!isUnavailableError(err)) {
      log.error({ err, ...extra }, message);
      return;
    }
    const now = Date.now();
    if (now - lastTroubleLog < TROUBLE_LOG_EVERY_MS) return;
    lastTroubleLog = now;
    log.warn({ reason: err instanceof Error ? err.message : String(err), ...extra }, message);
  }
  /** The database is usable now (the dispatcher waits, rather than fails, while it is not). */
  const databaseUp = () => store.availability.status().up;
  /** The recording under way: ended attempts are recorded beside the claims, never ahead of them. */
  let recording: Promise<void> | undefined;

  /** Records what ended, batch after batch, while claims go on (a claim never waits for it). */
  function record(): void {
    if (recording || rerecord) return;
    recording = (async () => {
      while (finished.length > 0) {
        if (!(await recordFinished())) return false;
      }
      return true;
    })().then((done) => {
      recording = undefined;
      if (!done) {
        // Again in a second, or as soon as the database is back.
        rerecord = setTimeout(retryRecording, RERECORD_MS);
        rerecord.unref();
      } else if (finished.length > 0) record();
      else if (inflight.size === 0 && idleWaiters.length > 0) wake();
    });
  }
  function retryRecording(): void {
    if (rerecord) clearTimeout(rerecord);
    rerecord = undefined;
    record();
  }

  /** Waits before recording again what could not be recorded: the database back, or a second. */
  let rerecord: NodeJS.Timeout | undefined;

  async function recordFinished(): Promise<boolean> {
    if (finished.length === 0) return true;
    const batch = finished;
    finished = [];
    try {
      await store.deliveries.finishAttempts(batch);
    } catch (err) {
      // Kept, in order, ahead of what ended since, and recorded once the database takes it: the
      // deliveries stay held (their sweep leaves them), so none is sent twice for want of a record.
      finished = batch.concat(finished);
      trouble(err, 'could not record finished attempts: kept, and recorded again shortly', {
        attempts: finished.length,
      });
      return false;
    }
    for (const { claimed } of batch) held.delete(claimed.delivery.id);
    // A retry is claimed when it comes due.
    let retryAt = Number.POSITIVE_INFINITY;
    for (const { result } of batch)
      if (result.outcome !== 'sent' && result.retryAt !== undefined)
        retryAt = Math.min(retryAt, result.retryAt);
    if (retryAt !== Number.POSITIVE_INFINITY) wakeAt(retryAt);
    return true;
  }

  function toAttempt(claimed: Claimed, result: SendResult, now: number): AttemptResult {
    if (result.ok) return { outcome: 'sent', providerId: result.providerId, response: result.response };
    const { attempts, expires_at } = claimed.delivery;
    let retryAt: number | undefined;
    if (result.kind === 'transient' && attempts < options.maxAttempts) {
      retryAt =
        now + retryDelay(attempts, result.retryAfterMs, options.retryBaseMs, options.retryMaxMs, random);
      // An auth code whose next try would fall after its validity is left pending: the expiry
      // sweep marks it expired when the time comes, so it is never sent late.
      if (expires_at !== null && retryAt > expires_at) retryAt = expires_at;
    }
    return {
      outcome: result.kind,
      error: result.error,
      status: result.status,
      response: result.response,
      retryAfterMs: result.retryAfterMs,
      retryAt,
    };
  }

  async function attempt(claimed: Claimed): Promise<void> {
    const { delivery } = claimed;
    let result: SendResult;
    try {
      const payload = parseDeliveryPayload(delivery);
      result =
        payload.kind === 'sms'
          ? await options.sms.send({
              to: delivery.recipient,
              text: store.deliveries.openText(delivery),
              maskedText: payload.maskedText,
              idempotencyKey: delivery.idempotency_key,
            })
          : await options.push.send({
              topic: delivery.recipient,
              title: payload.title,
              body: payload.body,
              data: payload.data,
              idempotencyKey: delivery.idempotency_key,
            });
    } catch (err) {
      if (err instanceof SealedValueError) {
        // Sealed under another key (instances with different CODE_ENCRYPTION_KEYs): no retry helps.
        log.error({ delivery: delivery.id }, err.message);
        result = { ok: false, kind: 'permanent', error: err.message };
      } else {
        // Providers do not throw; if one does, the attempt is a transient failure, not a crash.
        log.error({ err, delivery: delivery.id }, 'provider threw');
        result = { ok: false, kind: 'transient', error: 'The provider failed unexpectedly.' };
      }
    }
    const now = Date.now();
    if (!result.ok && result.status === 429) {
      // The provider says it is over its rate: this kind waits (Retry-After, else a second)
      // before anything more is sent to it, not just this delivery.
      const lane = laneOf(delivery.kind);
      lane.pausedUntil = Math.max(lane.pausedUntil, now + Math.min(result.retryAfterMs ?? 1000, 60_000));
    }
    const outcome = toAttempt(claimed, result, now);
    finished.push({ claimed, now, result: outcome });
    record();
    log.info(
      { delivery: delivery.id, kind: delivery.kind, attempt: delivery.attempts, outcome: outcome.outcome },
      'delivery attempt',
    );
  }

  /** Starts the attempt of a claimed delivery, its slot in `lane` already taken. */
  function launch(lane: Lane, c: Claimed): void {
    held.add(c.delivery.id);
    const done: Promise<void> = attempt(c)
      .catch((err: unknown) => {
        held.delete(c.delivery.id);
        log.error({ err, delivery: c.delivery.id }, 'delivery attempt failed');
      })
      .finally(() => {
        lane.busy--;
        inflight.delete(done);
        wake();
      });
    inflight.add(done);
  }

  const laneOf = (kind: DeliveryKind): Lane => lanes.find((l) => l.kind === kind) as Lane;

  /**
   * Deliveries claimed by the call recorder's own commit while a lane has room (SQLite): sent at
   * once, with no claim pass between the answer and the provider.
   */
  const handoff: Handoff = {
    leaseMs: options.leaseMs,
    reserve(kind, now) {
      const lane = laneOf(kind);
      if (!running || room(lane, now) <= 0) return false;
      lane.busy++;
      if (lane.perSecond !== null) lane.tokens -= 1;
      return true;
    },
    release(kind, count) {
      const lane = laneOf(kind);
      lane.busy -= count;
      if (lane.perSecond !== null) lane.tokens += count;
      wake();
    },
    take(claimed) {
      for (const c of claimed) {
        const lane = laneOf(c.delivery.kind);
        // Committed while the dispatcher stopped: nothing is sent after a stop. The delivery stays
        // `sending` with its attempt open, and the next start takes it up as interrupted.
        if (running) launch(lane, c);
        else lane.busy--;
      }
    },
  };

  /** One pass: claims what is due, each kind up to the room it has. */
  async function pass(): Promise<void> {
    // While the database is away nothing can be claimed: the pass after it is back does.
    if (!running || !databaseUp()) return;
    const now = Date.now();
    let claimed: Claimed[] = [];
    /** A claim failed: nothing can be said of what is due, so nobody waiting for idle is told. */
    let failed = false;
    for (const lane of lanes) {
      if (!lane.due) continue;
      const n = room(lane, now);
      if (n <= 0) continue;
      let got: Claimed[] = [];
      try {
        got = await store.deliveries.claimDue(now, n, now + options.leaseMs, lane.kind);
        if (got.length < n) lane.due = false;
      } catch (err) {
        failed = true;
        trouble(err, 'dispatcher pass failed');
      }
      if (lane.perSecond !== null) {
        lane.tokens -= got.length;
        // Held back by the cap with more perhaps due: look again when the next token comes.
        if (got.length === n && n < lane.concurrency - lane.busy)
          wakeAt(now + Math.ceil(((1 - (lane.tokens % 1)) * 1000) / lane.perSecond));
      }
      lane.busy += got.length;
      for (const c of got) launch(lane, c);
      claimed = claimed.concat(got);
    }
    if (!failed && claimed.length === 0 && inflight.size === 0 && finished.length === 0 && !recording) {
      for (const resolve of idleWaiters) resolve();
      idleWaiters = [];
    }
  }

  /** Passes run one at a time; a wake during one asks for another after it. */
  async function passes(): Promise<void> {
    while (woken) {
      woken = false;
      await pass();
    }
  }

  function wake(): void {
    if (!running) return;
    woken = true;
    if (passing) return;
    passing = new Promise<void>((resolve) => setImmediate(resolve)).then(passes).finally(() => {
      passing = undefined;
      if (woken && running) wake();
    });
  }

  /** Something may be due in the outbox (of `kind`, or of every kind): the next pass looks. */
  function mayBeDue(kind?: DeliveryKind): void {
    for (const lane of lanes) if (kind === undefined || lane.kind === kind) lane.due = true;
    wake();
  }

  const onQueued = () => mayBeDue();

  /** Expiry and lease recovery, by one instance at a time. */
  async function sweep(): Promise<void> {
    const status = store.availability.status();
    if (!status.up) return;
    if (finished.length > 0) retryRecording();
    try {
      await store.exclusively('delivery-sweep', async () => {
        const now = Date.now();
        await store.deliveries.expireStale(now);
        // Just back from an outage, every instance first records what it finished meanwhile.
        if (now - status.since < RECOVERY_GRACE_MS) return;
        // A lease runs out when an attempt outlived it or its instance stopped (kill -9): the
        // delivery is due again, here or on another instance. What this dispatcher holds stays.
        const recovered = await store.deliveries.recoverInterrupted(now, { except: held });
        if (recovered > 0) log.warn({ recovered }, 'deliveries whose lease ran out are due again');
      });
    } catch (err) {
      trouble(err, 'dispatcher sweep failed');
    }
    mayBeDue();
  }

  /** The database is back: what ended meanwhile is recorded first, then sending goes on. */
  const onUp = () => {
    retryRecording();
    mayBeDue();
  };

  return {
    start() {
      if (running) return;
      running = true;
      // Once the database has been reached (at once, unless it was down when the server started).
      starting = store.whenReady(
        async () => {
          begun = true;
          // An embedded database has one process: whatever is still `sending` at start was left by
          // a process that stopped mid-attempt, whatever its lease said. On PostgreSQL other
          // instances may be mid-attempt: only leases that ran out are taken over.
          try {
            const recovered = await store.deliveries.recoverInterrupted(Date.now(), {
              ignoreLeases: store.dialect === 'sqlite',
            });
            if (recovered > 0) log.warn({ recovered }, 'deliveries interrupted by a stop are due again');
          } catch (err) {
            trouble(err, 'could not recover interrupted deliveries');
          }
          if (!running) return;
          store.availability.events.on('up', onUp);
          store.deliveries.events.on('queued', onQueued);
          // One process owns an embedded database: what it queues it may claim as it commits.
          if (store.dialect === 'sqlite') store.deliveries.handoff = handoff;
          poll = setInterval(() => void sweep(), options.pollMs);
          poll.unref();
          wake();
        },
        (err) => log.error({ err }, 'the dispatcher could not start'),
      );
    },
    async stop() {
      running = false;
      // Waited for once begun; before that it waits for a database that may never come, and ends
      // with the store.
      if (begun) await starting;
      if (store.deliveries.handoff === handoff) store.deliveries.handoff = undefined;
      if (poll) clearInterval(poll);
      if (timer) clearTimeout(timer);
      if (rerecord) clearTimeout(rerecord);
      store.deliveries.events.off('queued', onQueued);
      store.availability.events.off('up', onUp);
      await passing;
      await Promise.all(inflight);
      await recording;
      // One last try; what still cannot be recorded is taken back by a sweep once its lease runs
      // out, and sent again with the same idempotency key.
      if (!(await recordFinished()))
        log.error({ attempts: finished.length }, 'finished attempts left unrecorded at stop');
      for (const resolve of idleWaiters) resolve();
      idleWaiters = [];
    },
    wake,
    async dispatchPushesNow() {
      try {
        const count = await store.deliveries.makePushesDue(Date.now());
        mayBeDue('push');
        return count;
      } catch (err) {
        log.error({ err }, 'could not make pushes due');
        return 0;
      }
    },
    idle() {
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        mayBeDue();
      });
    },
  };
}
