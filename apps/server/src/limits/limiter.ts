import type { LimitRepository, Store } from '../store/index.js';
import { type RateLimit, SlidingWindow } from './window.js';

/** One limit to check for one key. The same `dimension` always comes with the same `limit`. */
export interface LimitSpec {
  /** Which limit, e.g. `authcode-phone`; names the key's space. */
  readonly dimension: string;
  readonly key: string;
  readonly limit: RateLimit;
}

export type LimitResult =
  | {
      readonly ok: true /** Gives the slots back: what they were taken for did not happen. */;
      release(): Promise<void>;
    }
  | {
      readonly ok: false /** Which spec refused (index). */;
      readonly refused: number;
      readonly retryAfterMs: number;
    };

/**
 * Sliding-window limits whose check and slot are one atomic step, so a burst sent at once cannot
 * exceed them: in this process's memory on SQLite (one process owns the database), in the
 * database on PostgreSQL (shared by every instance, store/limits.ts).
 */
export interface Limiter {
  /** Takes one slot under every spec, or none. */
  take(specs: readonly LimitSpec[], now?: number): Promise<LimitResult>;
  /** Forgets a key's slots (e.g. a username's failed logins after a success). */
  forget(dimension: string, key: string): Promise<void>;
}

/** Loads what a key already used (times, newest first, at most `max`), e.g. from history. */
export type SeedLoader = (dimension: string, key: string, since: number, max: number) => Promise<number[]>;

export function createLimiter(store: Pick<Store, 'dialect' | 'limits'>, seed?: SeedLoader): Limiter {
  return store.dialect === 'postgres' ? sharedLimiter(store.limits) : memoryLimiter(seed);
}

/** In memory: the checks and the slots taken are one synchronous step on the event loop. */
export function memoryLimiter(seed?: SeedLoader): Limiter {
  const windows = new Map<string, SlidingWindow>();
  const seeding = new Map<string, Promise<void>>();
  const windowOf = (spec: LimitSpec): SlidingWindow => {
    let window = windows.get(spec.dimension);
    if (!window) {
      window = new SlidingWindow(spec.limit);
      windows.set(spec.dimension, window);
    }
    return window;
  };

  /** A key's committed history, loaded once when the key is first seen; concurrent first calls share it. */
  function ready(spec: LimitSpec): Promise<void> | undefined {
    const window = windowOf(spec);
    if (!seed || window.has(spec.key)) return undefined;
    const id = `${spec.dimension}\u0000${spec.key}`;
    let loading = seeding.get(id);
    if (!loading) {
      const { windowMs, max } = spec.limit;
      loading = seed(spec.dimension, spec.key, Date.now() - windowMs, max)
        .then((times) => window.seed(spec.key, times))
        .finally(() => seeding.delete(id));
      seeding.set(id, loading);
    }
    return loading;
  }

  return {
    async take(specs, at) {
      const pending = specs.map(ready).filter((p): p is Promise<void> => p !== undefined);
      if (pending.length > 0) await Promise.all(pending);
      // From here to the end nothing awaits: the checks and the slots taken are one step.
      const now = at ?? Date.now();
      const taken: [SlidingWindow, string, number][] = [];
      const giveBack = () => {
        for (const [window, key, slotAt] of taken) window.release(key, slotAt);
      };
      for (const [i, spec] of specs.entries()) {
        const window = windowOf(spec);
        const slot = window.take(spec.key, now);
        if (!slot.ok) {
          giveBack();
          return { ok: false, refused: i, retryAfterMs: slot.retryAfterMs };
        }
        taken.push([window, spec.key, slot.at]);
      }
      return {
        ok: true,
        async release() {
          giveBack();
        },
      };
    },
    async forget(dimension, key) {
      windows.get(dimension)?.clear(key);
    },
  };
}

/** In the database: one transaction under an advisory lock per key (store/limits.ts). */
export function sharedLimiter(repo: LimitRepository): Limiter {
  return {
    async take(specs, at) {
      const now = at ?? Date.now();
      return repo.take(
        specs.map((s) => ({
          dimension: s.dimension,
          key: s.key,
          max: s.limit.max,
          windowMs: s.limit.windowMs,
        })),
        now,
      );
    },
    forget(dimension, key) {
      return repo.forget(dimension, key);
    },
  };
}
