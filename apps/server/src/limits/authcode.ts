import { countryCallingCode } from '@school/contract';
import type { Store } from '../store/index.js';
import { describeWait, describeWindow, type RateLimit, SlidingWindow } from './window.js';

export interface AuthCodeLimitOptions {
  readonly perPhone: RateLimit | null;
  readonly perIp: RateLimit | null;
  readonly perCountry: RateLimit | null;
  readonly store: Store;
}

export type AuthCodeSlot =
  | { readonly ok: true /** Gives the slots back: the code was not queued after all. */; release(): void }
  | { readonly ok: false; readonly retryAfter: number; readonly message: string };

interface Dimension {
  readonly window: SlidingWindow;
  readonly who: (key: string) => string;
  /** Times of the codes already committed for this key, newest first, at most `max`. */
  readonly load: (key: string, since: number, max: number) => Promise<number[]>;
}

/**
 * AuthCode's abuse limits (docs/security.md#limits): per phone, per caller and per country calling
 * code. Each key's window is loaded from what the store has committed the first time the key is
 * seen (so a restart keeps the limits), then kept in memory, where checking and taking a slot is one
 * synchronous step: 200 simultaneous calls for one phone accept exactly `max`.
 */
export function createAuthCodeLimits(options: AuthCodeLimitOptions) {
  const { store } = options;
  const dimensions: [Dimension | null, Dimension | null, Dimension | null] = [
    options.perPhone && {
      window: new SlidingWindow(options.perPhone),
      who: () => 'this phone',
      load: (phone, since, max) => store.deliveries.recentSms(phone, since, max),
    },
    options.perIp && {
      window: new SlidingWindow(options.perIp),
      who: (ip) => `this caller (${ip})`,
      load: (ip, since, max) => store.calls.recentFrom(ip, 'AuthCode', since, max),
    },
    options.perCountry && {
      window: new SlidingWindow(options.perCountry),
      who: () => 'numbers with this country code',
      load: (prefix, since, max) => store.deliveries.recentSms(prefix, since, max, true),
    },
  ];
  const seeding = new Map<string, Promise<void>>();

  /** Loads a key's committed history once; concurrent first calls share the load. */
  function ready(dimension: Dimension, name: string, key: string): Promise<void> | undefined {
    if (dimension.window.has(key)) return undefined;
    const id = `${name}\u0000${key}`;
    let loading = seeding.get(id);
    if (!loading) {
      const { windowMs, max } = dimension.window.limit;
      const started = Date.now();
      loading = dimension
        .load(key, started - windowMs, max)
        .then((times) => dimension.window.seed(key, times))
        .finally(() => seeding.delete(id));
      seeding.set(id, loading);
    }
    return loading;
  }

  return {
    async take(phone: string, callerIp: string): Promise<AuthCodeSlot> {
      const country = countryCallingCode(phone);
      const keys = [phone, callerIp, country ? `+${country}` : undefined] as const;
      const pending: Promise<void>[] = [];
      dimensions.forEach((d, i) => {
        const key = keys[i];
        const loading = d && key !== undefined ? ready(d, String(i), key) : undefined;
        if (loading) pending.push(loading);
      });
      if (pending.length > 0) await Promise.all(pending);

      // From here to the end nothing awaits: the checks and the slots taken are one step.
      const now = Date.now();
      const taken: [SlidingWindow, string, number][] = [];
      const giveBack = () => {
        for (const [window, key, at] of taken) window.release(key, at);
      };
      for (const [i, d] of dimensions.entries()) {
        const key = keys[i];
        if (!d || key === undefined) continue;
        const slot = d.window.take(key, now);
        if (slot.ok) {
          taken.push([d.window, key, slot.at]);
          continue;
        }
        giveBack();
        const { max, windowMs } = d.window.limit;
        return {
          ok: false,
          retryAfter: Math.ceil(slot.retryAfterMs / 1000),
          message: `Too many codes for ${d.who(key)}: at most ${max} per ${describeWindow(windowMs)}. Try again in ${describeWait(slot.retryAfterMs)}.`,
        };
      }
      return { ok: true, release: giveBack };
    },
  };
}

export type AuthCodeLimits = ReturnType<typeof createAuthCodeLimits>;
