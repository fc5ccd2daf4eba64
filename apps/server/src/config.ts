import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isIpRange, isValidRegion, passwordSchema, usernameSchema } from '@school/contract';
import { z } from 'zod';
import { checkIdentityConfig, identityConfigShape } from './auth/config.js';
import { checkProviderConfig, providerConfigShape } from './providers/config.js';
import { secretKeyBytes } from './secrets/sealer.js';

/** An unset variable and an empty one (`PORT=` in a .env file) both mean "use the default". */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), schema);

const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const absoluteUrl = (what: string) =>
  z.string().refine((v) => URL.canParse(v), `must be an absolute URI, e.g. ${what}`);

/** A duration: seconds (`600`) or with a unit (`10m`, `90s`, `1h`), as milliseconds. */
const duration = z
  .string()
  .trim()
  .regex(/^\d+(ms|s|m|h)?$/, 'must be a duration such as 600 (seconds), 90s, 10m or 1h')
  .transform((v) => {
    const [, n = '0', unit = 's'] = /^(\d+)(ms|s|m|h)?$/.exec(v) ?? [];
    return Number(n) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h'];
  });

/** A rate limit: `N/duration` (`5/15m`), or `off`. */
const rateLimit = z
  .string()
  .trim()
  .toLowerCase()
  .transform((v, ctx): { max: number; windowMs: number } | null => {
    if (v === 'off' || v === '0') return null;
    const match = /^(\d+)\/(\d+)(ms|s|m|h)?$/.exec(v);
    if (!match || Number(match[1]) < 1) {
      ctx.addIssue({ code: 'custom', message: 'must be N/duration such as 5/15m or 30/1m, or off' });
      return z.NEVER;
    }
    const unit = (match[3] ?? 's') as 'ms' | 's' | 'm' | 'h';
    return {
      max: Number(match[1]),
      windowMs: Number(match[2]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit],
    };
  });

/** A rate in events per second (`50`), or `off`. */
const perSecond = z
  .string()
  .trim()
  .toLowerCase()
  .transform((v, ctx): number | null => {
    if (v === 'off' || v === '0') return null;
    if (!/^\d+(\.\d+)?$/.test(v) || Number(v) <= 0 || Number(v) > 100_000) {
      ctx.addIssue({ code: 'custom', message: 'must be a number of sends per second such as 50, or off' });
      return z.NEVER;
    }
    return Number(v);
  });

/** A comma-separated list of IP addresses or CIDR ranges. */
const ipRanges = z.string().transform((v, ctx): string[] => {
  const list = v
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const bad = list.filter((e) => !isIpRange(e));
  if (bad.length > 0) {
    ctx.addIssue({ code: 'custom', message: `not IP addresses or CIDR ranges: ${bad.join(', ')}` });
    return z.NEVER;
  }
  return list;
});

/** `*` or `any`: every address (null); otherwise a list of addresses or CIDR ranges. */
const ipRangesOrAny = z.preprocess(
  (v) => (typeof v === 'string' && /^\s*(\*|any)\s*$/i.test(v) ? null : v),
  ipRanges.nullable(),
);

/** Every environment variable the server reads; documented in the README and .env.example. */
export const configSchema = z.object({
  ...providerConfigShape,
  ...identityConfigShape,
  PORT: optional(integer(0, 65535).default(3000)),
  HOST: optional(z.string().default('0.0.0.0')),
  DATA_DIR: optional(z.string().default('./data')),
  SERVICE_NAMESPACE: optional(absoluteUrl('http://tempuri.org/').default('http://tempuri.org/')),
  PUBLIC_BASE_URL: optional(
    z
      .string()
      .refine((v) => /^https?:\/\/[^/?#]+(\/[^?#]*)?$/i.test(v) && URL.canParse(v), {
        message: 'must be an http(s) URL without query, e.g. https://sms.example.org',
      })
      .transform((v) => v.replace(/\/+$/, ''))
      .optional(),
  ),
  MAX_BODY_BYTES: optional(integer(1024, 256 * 1024 * 1024).default(1024 * 1024)),
  RECORD_MAX_BYTES: optional(integer(1024, 16 * 1024 * 1024).default(64 * 1024)),
  LOG_LEVEL: optional(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
  DEFAULT_PHONE_REGION: optional(
    z
      .string()
      .transform((v) => v.trim().toUpperCase())
      .refine(isValidRegion, 'must be an ISO 3166 region code such as GB or US')
      .optional(),
  ),
  TRUST_PROXY: optional(
    z
      .string()
      .transform((v, ctx): boolean | number | string => {
        const value = v.trim().toLowerCase();
        if (value === 'true') return true;
        if (value === 'false') return false;
        if (/^\d+$/.test(value)) return Number(value);
        if (/^[0-9a-f.:/,\s]+$/.test(value)) return value;
        ctx.addIssue({ code: 'custom', message: 'must be true, false, a hop count or a list of addresses' });
        return z.NEVER;
      })
      .default(false),
  ),
  SQLITE_SYNCHRONOUS: optional(z.enum(['FULL', 'NORMAL']).default('FULL')),
  /** `postgres://user:pass@host:5432/db`: run on PostgreSQL (several instances may share it); unset: SQLite in DATA_DIR. */
  DATABASE_URL: optional(
    z
      .string()
      .trim()
      .refine(
        (v) => /^postgres(ql)?:\/\//i.test(v) && URL.canParse(v),
        'must be a PostgreSQL URL such as postgres://user:password@127.0.0.1:5432/school',
      )
      .optional(),
  ),
  /** PostgreSQL connections each instance keeps open at most (one more listens for notifications). */
  DATABASE_POOL_SIZE: optional(integer(2, 500).default(10)),
  CONSOLE_DIR: optional(z.string().optional()),
  RETENTION_DAYS: optional(integer(1, 36_500).default(400)),
  AUTHCODE_TTL: optional(duration.default(600_000)),
  AUTHCODE_LIMIT_PER_PHONE: optional(rateLimit.default({ max: 5, windowMs: 15 * 60_000 })),
  AUTHCODE_LIMIT_PER_IP: optional(rateLimit.default({ max: 30, windowMs: 60_000 })),
  AUTHCODE_LIMIT_PER_COUNTRY: optional(rateLimit.default(null)),
  /** Older name: both kinds' concurrency, where SMS_CONCURRENCY / PUSH_CONCURRENCY are not set. */
  DISPATCH_CONCURRENCY: optional(integer(1, 1024).optional()),
  /** SMS provider requests under way at once (a gateway answering in 100 ms needs 100 for 1 000/s; 200 by default, twice that). */
  SMS_CONCURRENCY: optional(integer(1, 1024).optional()),
  /** Push provider requests under way at once. */
  PUSH_CONCURRENCY: optional(integer(1, 1024).optional()),
  /** SMS sends started per second at most (the provider's rate limit), or `off`. */
  SMS_RATE_LIMIT: optional(perSecond.default(null)),
  /** Push sends started per second at most, or `off`. */
  PUSH_RATE_LIMIT: optional(perSecond.default(null)),
  DELIVERY_MAX_ATTEMPTS: optional(integer(1, 100).default(8)),
  DELIVERY_RETRY_BASE_MS: optional(integer(1, 3_600_000).default(2000)),
  DELIVERY_RETRY_MAX_MS: optional(integer(1, 86_400_000).default(600_000)),
  DISPATCH_POLL_MS: optional(integer(10, 600_000).default(1000)),
  MAX_BOOK_BYTES: optional(integer(1024, 2 * 1024 * 1024 * 1024).default(50 * 1024 * 1024)),
  /** A free-text history search stops after this long and says how far back it got. */
  SEARCH_BUDGET_MS: optional(integer(1, 600_000).default(2000)),
  // --- staff accounts and exposure (docs/security.md) ---
  /** A session not used for this long ends. */
  SESSION_IDLE_TIMEOUT: optional(duration.default(30 * 60_000)),
  /** A session ends this long after login, however much it is used. */
  SESSION_MAX_AGE: optional(duration.default(12 * 3_600_000)),
  /** With ADMIN_PASSWORD: the first admin, created at start when no user exists. */
  ADMIN_USERNAME: optional(usernameSchema.optional()),
  ADMIN_PASSWORD: optional(passwordSchema.optional()),
  /** Host headers accepted; `*` accepts any. Default: PUBLIC_BASE_URL's host, localhost, the listen address. */
  ALLOWED_HOSTS: optional(
    z
      .string()
      .transform((v) =>
        v
          .split(',')
          .map((h) => h.trim().toLowerCase())
          .filter(Boolean),
      )
      .optional(),
  ),
  /** Caller ranges allowed on the .asmx endpoints; empty: any caller. */
  ASMX_ALLOWED_IPS: optional(ipRanges.default([])),
  /** Addresses that may scrape /metrics; null (`*` or `any`): every address. */
  METRICS_ALLOWED_IPS: optional(ipRangesOrAny.default(['127.0.0.1', '::1'])),
  /** All .asmx operation calls from one address. */
  ASMX_LIMIT_PER_IP: optional(rateLimit.default({ max: 1200, windowMs: 60_000 })),
  /** Failed logins per username, and per address. */
  LOGIN_LIMIT_PER_USER: optional(rateLimit.default({ max: 5, windowMs: 15 * 60_000 })),
  LOGIN_LIMIT_PER_IP: optional(rateLimit.default({ max: 30, windowMs: 15 * 60_000 })),
  /** Connections open at once; more are refused. */
  MAX_CONNECTIONS: optional(integer(10, 1_000_000).default(1024)),
  /** Bytes of request bodies being received at once, all requests together; more get 503. */
  MAX_INFLIGHT_BODY_BYTES: optional(integer(64 * 1024, 16 * 1024 * 1024 * 1024).default(64 * 1024 * 1024)),
  /** The book library's total size. */
  MAX_LIBRARY_BYTES: optional(integer(1024, 1024 * 1024 * 1024 * 1024).default(5 * 1024 * 1024 * 1024)),
  /** Below this much free space in DATA_DIR, raw bodies are no longer stored (summaries still are). */
  MIN_FREE_DISK_MB: optional(integer(0, 10_000_000).default(1024)),
  /**
   * Below this much free space in DATA_DIR, new calls are refused (503) before anything is
   * written: what is left is the outbox's reserve, to record the attempts of what was accepted.
   */
  REFUSE_FREE_DISK_MB: optional(integer(0, 10_000_000).default(64)),
  /**
   * The key auth codes are sealed with while they wait to be sent (32 bytes, base64 or hex). Unset
   * on SQLite: a key file created in DATA_DIR at first start. Required on PostgreSQL, the same on
   * every instance.
   */
  CODE_ENCRYPTION_KEY: optional(
    z
      .string()
      .trim()
      .refine(
        (v) => secretKeyBytes(v) !== undefined,
        'must be 32 random bytes in base64 or hex, e.g. the output of `openssl rand -base64 32`',
      )
      .optional(),
  ),
});

// apps/server/src/config.ts and the bundled apps/server/dist/server.js both sit two levels below
// apps/, where the console's build is.
const DEFAULT_CONSOLE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../console/dist');

export type Config = z.infer<typeof configSchema> & {
  /** DATA_DIR resolved to an absolute path. */
  readonly dataDir: string;
  /** CONSOLE_DIR resolved: the built console's folder. */
  readonly consoleDir: string;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Validates the environment once; a bad value is an error naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = configSchema
    .superRefine(checkProviderConfig)
    .superRefine(checkIdentityConfig)
    .superRefine((c, ctx) => {
      if (c.DATABASE_URL !== undefined && c.CODE_ENCRYPTION_KEY === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['CODE_ENCRYPTION_KEY'],
          message:
            'is required with DATABASE_URL: every instance sharing the database must seal auth codes with the same key (generate one with `openssl rand -base64 32`)',
        });
      }
      if ((c.ADMIN_USERNAME === undefined) !== (c.ADMIN_PASSWORD === undefined)) {
        ctx.addIssue({
          code: 'custom',
          path: [c.ADMIN_USERNAME === undefined ? 'ADMIN_USERNAME' : 'ADMIN_PASSWORD'],
          message: 'ADMIN_USERNAME and ADMIN_PASSWORD go together',
        });
      }
    })
    .safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return {
    ...result.data,
    dataDir: path.resolve(result.data.DATA_DIR),
    consoleDir: path.resolve(result.data.CONSOLE_DIR ?? DEFAULT_CONSOLE_DIR),
  };
}
