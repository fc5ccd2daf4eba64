import { countryCallingCode } from '@school/contract';
import type { Store } from '../store/index.js';
import { createLimiter, type LimitSpec } from './limiter.js';
import { describeWait, describeWindow, type RateLimit } from './window.js';

export interface AuthCodeLimitOptions {
  readonly perPhone: RateLimit | null;
  readonly perIp: RateLimit | null;
  readonly perCountry: RateLimit | null;
  /** Codes to one range of numbers (the number without its last RANGE_DIGITS digits). */
  readonly perRange: RateLimit | null;
  readonly store: Pick<Store, 'dialect' | 'limits'>;
  /**
   * What is committed in the database, for SQLite's windows after a restart: when a caller's newest
   * successful calls came (History's), and when the newest SMS to a number were queued (the
   * outbox's).
   */
  readonly recent: {
    readonly calls: {
      recentFrom(ip: string, operation: string, since: number, limit: number): Promise<number[]>;
    };
    readonly sms: {
      recentSms(recipient: string, since: number, limit: number, prefix?: boolean): Promise<number[]>;
    };
  };
}

export type AuthCodeSlot =
  | {
      readonly ok: true /** Gives the slots back: the code was not queued after all. */;
      release(): Promise<void>;
    }
  | {
      readonly ok: false;
      readonly retryAfter: number;
      readonly message: string;
      /** The limit that refused it (`authcode-range`, …), for the metric. */
      readonly dimension: string;
    };

/**
 * A range is a number without its last 3 digits: a block of 1 000 consecutive numbers, which is
 * how SMS pumping walks an operator's range (…0001, …0002, …) past every per-phone limit.
 */
export const RANGE_DIGITS = 3;
const rangeOf = (phone: string): string => phone.slice(0, -RANGE_DIGITS);

/** The per-caller key of a staff user (an address never starts so). */
const STAFF_KEY = 'staff:';

interface Dimension {
  readonly name: string;
  readonly limit: RateLimit;
  readonly who: (key: string) => string;
}

/**
 * AuthCode's abuse limits (docs/security.md#limits): per phone, per caller, per country calling
 * code and per range of numbers. Checking and taking a slot is one atomic step (limits/limiter.ts): 200 simultaneous calls
 * for one phone accept exactly `max`, on one instance (SQLite, in memory) or across several
 * (PostgreSQL, in the database). On SQLite a key's window is first loaded from what the database has
 * committed, so a restart keeps the limits; on PostgreSQL the slots themselves are kept.
 */
export function createAuthCodeLimits(options: AuthCodeLimitOptions) {
  const { store, recent } = options;
  const dimensions: readonly (Dimension | null)[] = [
    options.perPhone && { name: 'authcode-phone', limit: options.perPhone, who: () => 'this phone' },
    options.perIp && {
      name: 'authcode-ip',
      limit: options.perIp,
      who: (key) =>
        key.startsWith(STAFF_KEY) ? `you (${key.slice(STAFF_KEY.length)})` : `this caller (${key})`,
    },
    options.perCountry && {
      name: 'authcode-country',
      limit: options.perCountry,
      who: () => 'numbers with this country code',
    },
    options.perRange && {
      name: 'authcode-range',
      limit: options.perRange,
      who: (key) => `the numbers ${key}${'x'.repeat(RANGE_DIGITS)}`,
    },
  ];
  const limiter = createLimiter(store, (dimension, key, since, max) => {
    // A staff user's budget has no history by address to start from.
    if (dimension === 'authcode-ip' && key.startsWith(STAFF_KEY)) return Promise.resolve([]);
    if (dimension === 'authcode-ip') return recent.calls.recentFrom(key, 'AuthCode', since, max);
    return recent.sms.recentSms(
      key,
      since,
      max,
      dimension === 'authcode-country' || dimension === 'authcode-range',
    );
  });

  return {
    /**
     * A slot for a code to `phone` from `callerIp`; a staff user sending from the console (`staff`)
     * has a per-caller budget of their own instead of the address's, which anonymous callers on
     * the same machine share.
     */
    async take(phone: string, callerIp: string, staff?: string): Promise<AuthCodeSlot> {
      // Parsing the number again costs: only when a per-country limit is on.
      const country = options.perCountry ? countryCallingCode(phone) : undefined;
      const caller = staff === undefined ? callerIp : `${STAFF_KEY}${staff}`;
      const keys = [phone, caller, country ? `+${country}` : undefined, rangeOf(phone)] as const;
      const specs: (LimitSpec & { who: Dimension['who'] })[] = [];
      dimensions.forEach((d, i) => {
        const key = keys[i];
        if (d && key !== undefined) specs.push({ dimension: d.name, key, limit: d.limit, who: d.who });
      });
      if (specs.length === 0) return { ok: true, release: async () => {} };
      const taken = await limiter.take(specs);
      if (taken.ok) return taken;
      const spec = specs[taken.refused] as (typeof specs)[number];
      const { max, windowMs } = spec.limit;
      return {
        ok: false,
        dimension: spec.dimension,
        retryAfter: Math.ceil(taken.retryAfterMs / 1000),
        message: `Too many codes for ${spec.who(spec.key)}: at most ${max} per ${describeWindow(windowMs)}. Try again in ${describeWait(taken.retryAfterMs)}.`,
      };
    },
  };
}

export type AuthCodeLimits = ReturnType<typeof createAuthCodeLimits>;
