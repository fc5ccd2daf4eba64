import type { SendResult } from '../providers/types.js';
import type { Lane } from './lanes.js';
import type { Claimed } from './sql.js';

/**
 * The hedge (docs/outbox.md#the-hedge): an auth code whose attempt on the primary SMS provider
 * has not answered within SMS_HEDGE_AFTER is sent by the fallback too, under the same claim and
 * with the same idempotency key, its attempt recorded before the fallback is called. Whichever
 * attempt first says the message was taken settles the delivery as sent; the other's answer,
 * when it comes, is recorded as an attempt and changes nothing. Both failing, the delivery's
 * fate is the fallback's (retried later on it, or dead), as after a failover.
 *
 * Only a code's first attempt is hedged, once: a code is never with more than two providers at
 * once, and one taken over after its instance died (which may have hedged it) is not hedged again.
 * An attempt past the hedge counts in its lane's `stalled` until it ends: a primary whose every
 * slot is held so lets the fallback take what waits for it (lanes.ts Lanes.routedTo).
 */

/** While the fallback's lane has no room (its concurrency, its rate), the hedge looks again this often. */
export const HEDGE_RECHECK_MS = 250;

/** Whether an attempt of `claimed` on `lane` is hedged on `fallback` if it does not answer in time. */
export function hedgeable(
  lane: Lane,
  claimed: Claimed,
  fallback: Lane | undefined,
  maxAttempts: number,
): fallback is Lane {
  const { delivery } = claimed;
  return (
    fallback !== undefined &&
    lane.role === 'primary' &&
    // Codes only: a code has a validity (expires_at); a push has neither a fallback nor a hurry.
    delivery.kind === 'sms' &&
    delivery.expires_at !== null &&
    delivery.attempts === 1 &&
    delivery.attempts < maxAttempts
  );
}

/** Whether an attempt that ended so may have given the message to its provider. */
export const mayHaveTaken = (result: SendResult): boolean =>
  result.ok || (result.kind === 'transient' && result.taken !== 'no');

/** What the end of one of a hedged code's two attempts does to its delivery. */
export type RaceEnd =
  /** Nothing: the other attempt settled it, or may still send it. The attempt alone is recorded. */
  | { readonly kind: 'leave' }
  /** Sent by this attempt's provider; `unsure`: the other's, when it may have sent it too. */
  | { readonly kind: 'sent'; readonly unsure: string | null }
  /** Both failed: the fallback's result decides; `unsure`: a provider that may have taken it. */
  | { readonly kind: 'failed'; readonly fallback: SendResult; readonly unsure: string | null };

/** One code's attempt on the primary, its hedge timer, and, once hedged, its attempt on the fallback. */
export class Race {
  /** The hedge's timer, until it fires or the primary's attempt ends. */
  timer: NodeJS.Timeout | undefined;
  /** The fallback's attempt being recorded (undefined once it could not be: no hedge). */
  recording: Promise<Claimed | undefined> | undefined;
  /** The fallback's attempt, once recorded: the delivery as the hedge left it. */
  hedged: Claimed | undefined;
  readonly #ended = new Map<Lane, SendResult>();
  #settled = false;
  /** The primary's attempt has ended: no hedge starts any more. */
  #over = false;
  /** Counted in the primary lane's `stalled` (its attempt outlived the hedge) until it ends. */
  #stalled = false;

  constructor(
    readonly primary: Lane,
    readonly claimed: Claimed,
    readonly fallback: Lane,
  ) {}

  /** The hedge's time came with the primary's attempt under way: its lane is told until it ends. */
  stall(): void {
    if (this.#stalled || this.#over) return;
    this.#stalled = true;
    this.primary.stalled++;
  }

  /** Whether a hedge may still start (the primary's attempt is under way, none started yet). */
  get open(): boolean {
    return !this.#over && this.recording === undefined;
  }

  /**
   * An attempt of the race ended: for the primary's, no hedge starts any more, and the one being
   * recorded is waited for. True when the fallback's attempt was recorded: the race settles the
   * delivery.
   */
  async joined(lane: Lane): Promise<boolean> {
    if (lane === this.fallback) return true;
    this.#over = true;
    if (this.#stalled) this.primary.stalled--;
    this.#stalled = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    return (await this.recording) !== undefined;
  }

  /** The attempt on `lane` ended with `result`: what it does to the delivery. */
  end(lane: Lane, result: SendResult): RaceEnd {
    this.#ended.set(lane, result);
    if (this.#settled) return { kind: 'leave' };
    const other = lane === this.primary ? this.fallback : this.primary;
    const theirs = this.#ended.get(other);
    if (result.ok) {
      this.#settled = true;
      return { kind: 'sent', unsure: theirs === undefined || mayHaveTaken(theirs) ? other.id : null };
    }
    if (theirs === undefined) return { kind: 'leave' };
    this.#settled = true;
    const unsure = [this.primary, this.fallback].find((l) => mayHaveTaken(this.#ended.get(l) as SendResult));
    return {
      kind: 'failed',
      fallback: this.#ended.get(this.fallback) as SendResult,
      unsure: unsure?.id ?? null,
    };
  }
}
