import type { Provider, PushMessage, SmsMessage } from '../providers/types.js';
import { Circuit, type CircuitChange, type CircuitState } from './circuit.js';
import type { DeliveryKind } from './schema.js';

/** How many attempts one provider may have under way, and how fast it may be sent to. */
export interface LaneLimits {
  /** Attempts under way at once (each is one request to the provider). */
  readonly concurrency: number;
  /** Sends started per second at most (the provider's rate limit); null: no cap. */
  readonly perSecond: number | null;
  /**
   * Ramping up, an answer slower than this (ms) lets no more attempts start: the provider is
   * queueing them (a quarter of the provider timeout; none: every answer counts).
   */
  readonly slowMs?: number;
}

/**
 * A lane ramping up (after a takeover, or its circuit closing) starts with this many attempts
 * under way at most, and may have one more for each that succeeds quickly (LaneLimits.slowMs), half
 * as many after a failure, up to its concurrency: the work released reaches the provider as fast
 * as it answers, not as one burst that could cause the failure it recovers from.
 */
export const RAMP_FIRST = 8;

/**
 * Attempts whose outcome is unknown (a timeout, a connection lost) started within this long of
 * one another count as one failure for the circuit: a provider taking a few connections at a time
 * lets a burst wait, and its timeouts then arrive together.
 */
export const TOGETHER_MS = 50;

/** A provider a kind of delivery goes through: its kind's primary, or the fallback. */
export type LaneProvider =
  | { readonly kind: 'sms'; readonly provider: Provider<SmsMessage> }
  | { readonly kind: 'push'; readonly provider: Provider<PushMessage> };

/**
 * One provider's lane (docs/outbox.md): its own budget of attempts under way, its
 * rate cap, the pause a 429 asks for, and its circuit breaker. A slow or failing provider uses up
 * only its own lane: the other kind, and the fallback, keep theirs.
 */
export class Lane {
  /** The provider's id in deliveries and attempts: its name, `-fallback` added for the fallback. */
  readonly id: string;
  readonly kind: DeliveryKind;
  readonly role: 'primary' | 'fallback';
  readonly target: LaneProvider;
  readonly circuit: Circuit;
  busy = 0;
  /**
   * Deliveries this lane claims may be due. False once a claim found fewer than it asked for; true
   * again (markDue) when a commit leaves some pending, a retry comes due, a sweep or pushNoti runs.
   */
  due = true;
  /**
   * How often it was marked due: a claim that began before the last mark (its query may not have
   * seen what the mark was for) does not clear `due`.
   */
  dueMarks = 0;

  markDue(): void {
    this.due = true;
    this.dueMarks++;
  }

  /** Attempts under way on this lane that have not answered within the hedge (outbox/hedge.ts). */
  stalled = 0;

  /**
   * Every slot taken, and some by attempts the provider has not answered within the hedge: it is
   * not answering, and what waits for it goes to the fallback (Lanes.routedTo) until it answers
   * or its circuit opens.
   */
  get stalling(): boolean {
    return this.stalled > 0 && this.busy >= (this.#rampCap ?? this.limits.concurrency);
  }
  #tokens: number;
  #refilledAt = Date.now();
  #pausedUntil = 0;
  /** Ramping up: attempts under way allowed now; undefined: the concurrency. */
  #rampCap: number | undefined;
  /** When the last attempt whose unknown outcome the circuit counted was started. */
  #lastUnknownStart = Number.NEGATIVE_INFINITY;

  constructor(
    target: LaneProvider,
    role: 'primary' | 'fallback',
    readonly limits: LaneLimits,
    onCircuitChange: (lane: Lane, change: CircuitChange) => void,
  ) {
    this.target = target;
    this.kind = target.kind;
    this.role = role;
    this.id = role === 'primary' ? target.provider.name : `${target.provider.name}-fallback`;
    this.#tokens = limits.perSecond ?? 0;
    this.circuit = new Circuit((change) => {
      // Closed again after its probes: what waited for it is released at the pace it answers.
      if (change.to === 'closed') this.ramp();
      onCircuitChange(this, change);
    });
  }

  /** Attempts under way grow from RAMP_FIRST as answers come back (a takeover, a circuit closing). */
  ramp(): void {
    this.#rampCap = RAMP_FIRST < this.limits.concurrency ? RAMP_FIRST : undefined;
  }

  /** Ramping up: attempts under way allowed now (undefined: not ramping). */
  get rampCap(): number | undefined {
    return this.#rampCap;
  }

  /**
   * How many attempts may start now: free slots, within the rate cap, any pause and the circuit.
   * `wakeAt` learns when room may come back (a pause's end, the next token, a cool-down's end).
   */
  room(now: number, wakeAt: (at: number) => void): number {
    if (this.#pausedUntil > now) {
      wakeAt(this.#pausedUntil);
      return 0;
    }
    let free = (this.#rampCap ?? this.limits.concurrency) - this.busy;
    if (this.limits.perSecond !== null) {
      this.#tokens = Math.min(
        this.limits.perSecond,
        this.#tokens + ((now - this.#refilledAt) / 1000) * this.limits.perSecond,
      );
      this.#refilledAt = now;
      free = Math.min(free, Math.floor(this.#tokens));
      if (free <= 0) wakeAt(now + Math.ceil(((1 - (this.#tokens % 1)) * 1000) / this.limits.perSecond));
    }
    const allowed = this.circuit.allow(Math.max(0, free), now);
    const openUntil = this.circuit.openUntil();
    if (openUntil > 0) wakeAt(openUntil);
    return allowed;
  }

  /** `count` attempts start on this lane. */
  take(count: number, now: number): void {
    this.busy += count;
    if (this.limits.perSecond !== null) this.#tokens -= count;
    for (let i = 0; i < count; i++) this.circuit.started(now);
  }

  /** Slots taken for attempts that did not start (their commit failed). */
  giveBack(count: number): void {
    this.busy -= count;
    if (this.limits.perSecond !== null) this.#tokens += count;
    for (let i = 0; i < count; i++) this.circuit.cancelled();
  }

  /**
   * An attempt on this lane, started at `startedAt`, ended at `now`; `failed`: the provider did not
   * work (for the circuit); `unknown`: whether the provider took the message is not known (a
   * timeout, a connection lost).
   */
  ended(failed: boolean, now: number, startedAt: number = now, unknown = false): void {
    this.busy--;
    if (this.#rampCap !== undefined) {
      if (failed) this.#rampCap = Math.max(RAMP_FIRST, Math.floor(this.#rampCap / 2));
      else if (now - startedAt <= (this.limits.slowMs ?? Number.POSITIVE_INFINITY)) {
        if (++this.#rampCap >= this.limits.concurrency) this.#rampCap = undefined;
      }
    }
    let together = false;
    if (failed && unknown) {
      together = Math.abs(startedAt - this.#lastUnknownStart) <= TOGETHER_MS;
      if (!together) this.#lastUnknownStart = startedAt;
    }
    this.circuit.ended(failed, now, together);
  }

  /** The provider asked to wait (a 429): nothing more starts on this lane until then. */
  pause(until: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, until);
  }

  state(now: number = Date.now()): CircuitState {
    return this.circuit.state(now);
  }
}

/**
 * The lanes of each kind, primary first. A lane claims the deliveries routed to it and, while
 * its own circuit is closed, those routed to another lane of its kind whose circuit is not, or
 * (the fallback) to a primary that is stalling (docs/outbox.md#providers-lanes-and-circuits).
 */
export class Lanes {
  readonly all: readonly Lane[];

  constructor(lanes: readonly Lane[]) {
    this.all = lanes;
  }

  of(kind: DeliveryKind): Lane[] {
    return this.all.filter((l) => l.kind === kind);
  }

  byId(id: string): Lane | undefined {
    return this.all.find((l) => l.id === id);
  }

  /** The providers whose deliveries `lane` claims now: its own, and those it takes over. */
  routedTo(lane: Lane, now: number): string[] {
    const ids = [lane.id];
    if (lane.state(now) !== 'closed') return ids;
    for (const other of this.of(lane.kind))
      if (other !== lane && (other.state(now) !== 'closed' || (lane.role === 'fallback' && other.stalling)))
        ids.push(other.id);
    return ids;
  }

  /**
   * Where a delivery of `kind` queued for `provider` goes if it can start now, in its call's own
   * commit (the hand-off): its lane when that has room, else a lane taking it over; undefined: none.
   */
  forNew(kind: DeliveryKind, provider: string, now: number, wakeAt: (at: number) => void): Lane | undefined {
    for (const lane of this.of(kind)) {
      if (!this.routedTo(lane, now).includes(provider)) continue;
      if (lane.room(now, wakeAt) > 0) return lane;
    }
    return undefined;
  }

  /**
   * The other lane a delivery goes to, at once, after `from` refused it for certain (it did not
   * take the message): the primary's fallback, while the fallback's circuit is not open. Only from
   * the primary: two failing providers never pass a delivery back and forth.
   */
  failoverFrom(from: Lane, now: number): Lane | undefined {
    if (from.role !== 'primary') return undefined;
    return this.of(from.kind).find((l) => l.role === 'fallback' && l.state(now) !== 'open');
  }

  /** The lane a slow attempt on `from` may be hedged on (outbox/hedge.ts): the primary's fallback. */
  hedgeFrom(from: Lane): Lane | undefined {
    if (from.role !== 'primary') return undefined;
    return this.of(from.kind).find((l) => l.role === 'fallback');
  }
}
