/**
 * A provider's circuit breaker (docs/outbox.md#providers-lanes-and-circuits).
 *
 * - closed: attempts go to the provider.
 * - open: after repeated failures — FAILURES_IN_A_ROW in a row, or at least half of the attempts
 *   of the last WINDOW_MS (MIN_IN_WINDOW of them at least) — no attempt goes to it for a cool-down.
 * - half-open: after the cool-down, up to PROBES attempts at once go to it; PROBES successes in a
 *   row close it, one failure opens it again for a cool-down twice as long (up to MAX_COOL_DOWN_MS).
 *
 * A failure is what says the provider is not working: a timeout, a network error, a 5xx or 429.
 * A permanent refusal of one message (an invalid number) says it is working, and counts as a
 * success here.
 *
 * An outcome costs the same whatever the send rate: the window is counted in WINDOW_BUCKETS
 * buckets of a second (OutcomeWindow), never as a list of outcomes re-read on each attempt: such
 * a list grows with the send rate, and at saturation re-reading it took a large part of the
 * CPU (docs/performance.md#what-was-tried).
 */
export type CircuitState = 'closed' | 'half-open' | 'open';

/** The metric's values (school_provider_circuit). */
export const CIRCUIT_GAUGE: Readonly<Record<CircuitState, number>> = { closed: 0, 'half-open': 1, open: 2 };

export const FAILURES_IN_A_ROW = 5;
export const WINDOW_MS = 10_000;
export const MIN_IN_WINDOW = 10;
export const COOL_DOWN_MS = 15_000;
export const MAX_COOL_DOWN_MS = 120_000;
export const PROBES = 3;
/** The window is counted in this many buckets of WINDOW_MS / WINDOW_BUCKETS each. */
export const WINDOW_BUCKETS = 10;
const BUCKET_MS = WINDOW_MS / WINDOW_BUCKETS;

/**
 * Attempts and failures of the last WINDOW_MS, in WINDOW_BUCKETS fixed buckets: an outcome adds
 * to the newest bucket, and the buckets that time has left behind are emptied as it moves on (at
 * most WINDOW_BUCKETS of them per outcome, however long the pause). The window so covers between
 * WINDOW_MS − BUCKET_MS and WINDOW_MS, and its memory is the same after a million outcomes as
 * after one.
 */
export class OutcomeWindow {
  readonly #attempts = new Float64Array(WINDOW_BUCKETS);
  readonly #failures = new Float64Array(WINDOW_BUCKETS);
  /** The newest bucket's number (time / BUCKET_MS); a clock that goes back counts in it. */
  #newest = Number.NEGATIVE_INFINITY;
  #attemptTotal = 0;
  #failureTotal = 0;

  /** Counts an outcome at `now`. */
  add(failed: boolean, now: number): void {
    const slot = this.#advance(now);
    this.#attempts[slot] = (this.#attempts[slot] as number) + 1;
    this.#attemptTotal++;
    if (failed) {
      this.#failures[slot] = (this.#failures[slot] as number) + 1;
      this.#failureTotal++;
    }
  }

  /** Attempts counted in the window. */
  get attempts(): number {
    return this.#attemptTotal;
  }

  /** Failures counted in the window. */
  get failures(): number {
    return this.#failureTotal;
  }

  /** How many buckets it keeps: WINDOW_BUCKETS, whatever it has counted. */
  get buckets(): number {
    return this.#attempts.length;
  }

  clear(): void {
    this.#attempts.fill(0);
    this.#failures.fill(0);
    this.#attemptTotal = 0;
    this.#failureTotal = 0;
  }

  /** Moves the window to `now`, emptying the buckets it leaves; answers the newest bucket's slot. */
  #advance(now: number): number {
    const bucket = Math.floor(now / BUCKET_MS);
    if (bucket > this.#newest) {
      const passed = Math.min(bucket - this.#newest, WINDOW_BUCKETS);
      for (let k = passed - 1; k >= 0; k--) {
        const slot = (((bucket - k) % WINDOW_BUCKETS) + WINDOW_BUCKETS) % WINDOW_BUCKETS;
        this.#attemptTotal -= this.#attempts[slot] as number;
        this.#failureTotal -= this.#failures[slot] as number;
        this.#attempts[slot] = 0;
        this.#failures[slot] = 0;
      }
      this.#newest = bucket;
    }
    return ((this.#newest % WINDOW_BUCKETS) + WINDOW_BUCKETS) % WINDOW_BUCKETS;
  }
}

export interface CircuitChange {
  readonly from: CircuitState;
  readonly to: CircuitState;
  /** Why, in words (for the log). */
  readonly reason: string;
}

export class Circuit {
  #state: CircuitState = 'closed';
  #since: number;
  #inARow = 0;
  /** Outcomes of the last WINDOW_MS. */
  readonly #recent = new OutcomeWindow();
  #openUntil = 0;
  #coolDownMs = COOL_DOWN_MS;
  /** Half-open: probes under way, and successes so far. */
  #probing = 0;
  #probed = 0;

  constructor(
    private readonly onChange: (change: CircuitChange) => void = () => {},
    now: number = Date.now(),
  ) {
    this.#since = now;
  }

  /** The state at `now` (an open circuit whose cool-down is over is half-open). */
  state(now: number = Date.now()): CircuitState {
    if (this.#state === 'open' && now >= this.#openUntil)
      this.#change('half-open', 'its cool-down is over', now);
    return this.#state;
  }

  /** Since when it is in this state (epoch ms). */
  since(): number {
    return this.#since;
  }

  /** Open: when its cool-down ends and it is tried again (epoch ms); otherwise null. */
  until(now: number = Date.now()): number | null {
    return this.state(now) === 'open' ? this.#openUntil : null;
  }

  /** What it counts in its window now: attempts, failures, and the buckets it keeps them in. */
  window(): { readonly attempts: number; readonly failures: number; readonly buckets: number } {
    const { attempts, failures, buckets } = this.#recent;
    return { attempts, failures, buckets };
  }

  /** When an open circuit lets probes through (epoch ms); 0 when it is not open. */
  openUntil(): number {
    return this.#state === 'open' ? this.#openUntil : 0;
  }

  /** How many attempts it lets start now, of `wanted` (half-open: what the probes leave). */
  allow(wanted: number, now: number = Date.now()): number {
    const state = this.state(now);
    if (state === 'open') return 0;
    if (state === 'half-open') return Math.max(0, Math.min(wanted, PROBES - this.#probing - this.#probed));
    return wanted;
  }

  /** An attempt starts (counted as a probe while half-open). */
  started(now: number = Date.now()): void {
    if (this.state(now) === 'half-open') this.#probing++;
  }

  /** An attempt counted by `started` did not happen after all (its commit failed). */
  cancelled(): void {
    if (this.#state === 'half-open') this.#probing = Math.max(0, this.#probing - 1);
  }

  /**
   * An attempt started with `started` ended: `failed` says the provider did not work; `together`:
   * a failure of the same kind as one already counted, by an attempt started with it (lanes.ts
   * TOGETHER_MS), which says nothing new while closed.
   */
  ended(failed: boolean, now: number = Date.now(), together = false): void {
    const state = this.state(now);
    if (state === 'half-open') {
      this.#probing = Math.max(0, this.#probing - 1);
      if (failed) {
        this.#coolDownMs = Math.min(this.#coolDownMs * 2, MAX_COOL_DOWN_MS);
        this.#open(now, 'a probe failed');
      } else if (++this.#probed >= PROBES) {
        this.#coolDownMs = COOL_DOWN_MS;
        this.#reset();
        this.#change('closed', `${PROBES} probes succeeded`, now);
      }
      return;
    }
    // Ended after the circuit opened (started before), or with others started with it: it says
    // nothing new.
    if (state === 'open' || (failed && together)) return;
    this.#inARow = failed ? this.#inARow + 1 : 0;
    this.#recent.add(failed, now);
    if (this.#inARow >= FAILURES_IN_A_ROW) {
      this.#open(now, `${this.#inARow} failures in a row`);
      return;
    }
    const { attempts, failures } = this.#recent;
    if (attempts >= MIN_IN_WINDOW && failures * 2 >= attempts) {
      this.#open(now, `${failures} of the last ${attempts} attempts failed within ${WINDOW_MS / 1000} s`);
    }
  }

  #open(now: number, reason: string): void {
    this.#reset();
    this.#openUntil = now + this.#coolDownMs;
    this.#change(
      'open',
      `${reason}; no attempt goes to it for ${Math.round(this.#coolDownMs / 1000)} s`,
      now,
    );
  }

  #reset(): void {
    this.#inARow = 0;
    this.#recent.clear();
    this.#probing = 0;
    this.#probed = 0;
  }

  #change(to: CircuitState, reason: string, now: number): void {
    const from = this.#state;
    if (from === to) return;
    this.#state = to;
    this.#since = now;
    this.onChange({ from, to, reason });
  }
}
