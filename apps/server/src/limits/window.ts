/** At most `max` events per `windowMs`. */
export interface RateLimit {
  readonly max: number;
  readonly windowMs: number;
}

export type Taken =
  | { readonly ok: true; readonly at: number }
  | { readonly ok: false; readonly retryAfterMs: number };

/**
 * A sliding-window log per key, in memory. `take` checks and reserves a slot in one synchronous
 * step, so requests running concurrently on the event loop cannot both pass the check for the
 * last slot (docs/security.md, "Limits"). Each key keeps at most `max` times; past `maxKeys`
 * keys, those with nothing in their window go first, then the oldest.
 */
export class SlidingWindow {
  readonly #windows = new Map<string, number[]>();

  constructor(
    readonly limit: RateLimit,
    readonly maxKeys = 100_000,
  ) {}

  has(key: string): boolean {
    return this.#windows.has(key);
  }

  /** Sets a key's history (event times, any order) if the key has none yet. */
  seed(key: string, times: readonly number[], now = Date.now()): void {
    if (this.#windows.has(key)) return;
    const since = now - this.limit.windowMs;
    const kept = times.filter((t) => t > since).sort((a, b) => a - b);
    this.#store(key, kept.slice(-this.limit.max));
  }

  take(key: string, now = Date.now()): Taken {
    const times = this.#current(key, now);
    if (times.length >= this.limit.max) {
      const oldest = times[0] ?? now;
      return { ok: false, retryAfterMs: Math.max(1, oldest + this.limit.windowMs - now) };
    }
    times.push(now);
    this.#store(key, times);
    return { ok: true, at: now };
  }

  /** Gives back a slot taken at `at` (the action it was taken for did not happen). */
  release(key: string, at: number): void {
    const times = this.#windows.get(key);
    const i = times?.lastIndexOf(at) ?? -1;
    if (times && i !== -1) times.splice(i, 1);
  }

  /** Forgets a key (e.g. failed logins after a successful one). */
  clear(key: string): void {
    this.#windows.delete(key);
  }

  /** How long until a slot frees up; 0 when one is free now. */
  waitMs(key: string, now = Date.now()): number {
    const times = this.#current(key, now);
    if (times.length < this.limit.max) return 0;
    return Math.max(1, (times[0] ?? now) + this.limit.windowMs - now);
  }

  #current(key: string, now: number): number[] {
    const times = this.#windows.get(key) ?? [];
    const since = now - this.limit.windowMs;
    let drop = 0;
    while (drop < times.length && (times[drop] as number) <= since) drop++;
    if (drop > 0) times.splice(0, drop);
    return times;
  }

  #store(key: string, times: number[]): void {
    if (!this.#windows.has(key) && this.#windows.size >= this.maxKeys) this.#evict();
    this.#windows.set(key, times);
  }

  #evict(): void {
    const now = Date.now();
    for (const key of [...this.#windows.keys()]) {
      if (this.#current(key, now).length === 0) this.#windows.delete(key);
    }
    // Still full: the least recently created keys go (a store-backed limit reseeds them).
    const excess = this.#windows.size - Math.floor(this.maxKeys * 0.9);
    if (excess <= 0) return;
    let n = 0;
    for (const key of this.#windows.keys()) {
      if (n++ >= excess) break;
      this.#windows.delete(key);
    }
  }
}

/**
 * Fixed windows per key: a counter that starts again every `windowMs`. Cheaper than a log for
 * generous limits (hundreds per minute), exact within a window.
 */
export class FixedWindow {
  readonly #counters = new Map<string, { start: number; count: number; refused: number }>();

  constructor(
    readonly limit: RateLimit,
    readonly maxKeys = 100_000,
  ) {}

  /**
   * Counts one event. `refused` is how many were refused in this window before this one (0 for
   * the first refusal), so callers can record the first refusal and skip the rest.
   */
  hit(
    key: string,
    now = Date.now(),
  ): { ok: true } | { ok: false; retryAfterMs: number; refusedBefore: number } {
    let counter = this.#counters.get(key);
    if (!counter || now - counter.start >= this.limit.windowMs) {
      if (!counter && this.#counters.size >= this.maxKeys) this.#sweep(now);
      counter = { start: now, count: 0, refused: 0 };
      this.#counters.set(key, counter);
    }
    if (counter.count < this.limit.max) {
      counter.count++;
      return { ok: true };
    }
    const refusedBefore = counter.refused++;
    return { ok: false, retryAfterMs: Math.max(1, counter.start + this.limit.windowMs - now), refusedBefore };
  }

  #sweep(now: number): void {
    for (const [key, counter] of this.#counters) {
      if (now - counter.start >= this.limit.windowMs) this.#counters.delete(key);
    }
    let excess = this.#counters.size - Math.floor(this.maxKeys * 0.9);
    for (const key of this.#counters.keys()) {
      if (excess-- <= 0) break;
      this.#counters.delete(key);
    }
  }
}

/** "15 minutes", "1 hour", "30 seconds": a window in words. */
export function describeWindow(ms: number): string {
  if (ms % 3_600_000 === 0) return ms === 3_600_000 ? 'hour' : `${ms / 3_600_000} hours`;
  if (ms % 60_000 === 0) return ms === 60_000 ? 'minute' : `${ms / 60_000} minutes`;
  return `${Math.round(ms / 1000)} seconds`;
}

/** A wait in words: "45 seconds", "15 minutes", "2 hours". */
export function describeWait(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  if (s < 90) return `${s} second${s === 1 ? '' : 's'}`;
  const m = Math.ceil(s / 60);
  if (m < 90) return `${m} minutes`;
  return `${Math.ceil(m / 60)} hours`;
}
