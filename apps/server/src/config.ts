import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isValidRegion, passwordSchema, usernameSchema } from '@school/contract';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { checkIdentityConfig, identityConfigShape } from './auth/config.js';
import {
  absoluteUrl,
  duration,
  integer,
  ipRanges,
  ipRangesOrAny,
  issuesOn,
  isUrlMatching,
  list,
  lowerEnum,
  optional,
  perSecond,
  rateLimit,
  withoutTrailingSlash,
} from './env/values.js';
import { checkProviderConfig, providerConfigShape } from './providers/config.js';
import { secretKeyBytes } from './secrets/sealer.js';
import { PARTITION_PERIODS } from './store/index.js';

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
      .refine(isUrlMatching(/^https?:\/\/[^/?#]+(\/[^?#]*)?$/i), {
        message: 'must be an http(s) URL without query, e.g. https://sms.example.org',
      })
      .transform(withoutTrailingSlash)
      .optional(),
  ),
  /** The largest body where a route has no limit of its own: the console's API (not book uploads). */
  MAX_BODY_BYTES: optional(integer(1024, 256 * 1024 * 1024).default(1024 * 1024)),
  /**
   * A request to an `.asmx` path: the operations take a few short strings, so a body past this
   * is refused (413) before more of it is read (docs/security.md#limits).
   */
  ASMX_MAX_BODY_BYTES: optional(integer(1024, 256 * 1024 * 1024).default(64 * 1024)),
  RECORD_MAX_BYTES: optional(integer(1024, 16 * 1024 * 1024).default(64 * 1024)),
  LOG_LEVEL: optional(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
  /**
   * `auto`: readable lines when the output is a terminal, JSON lines otherwise; `json`, `pretty`:
   * always that (src/logging.ts).
   */
  LOG_FORMAT: optional(z.enum(['auto', 'json', 'pretty']).default('auto')),
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
        isUrlMatching(/^postgres(ql)?:\/\//i),
        'must be a PostgreSQL URL such as postgres://user:password@127.0.0.1:5432/school',
      )
      .optional(),
  ),
  /** PostgreSQL connections each instance keeps open at most (one more listens for notifications). */
  DATABASE_POOL_SIZE: optional(integer(2, 500).default(10)),
  /**
   * A streaming replica of DATABASE_URL's database (`pg_basebackup -R`): History, exports,
   * free-text search and the Dashboard read from it while it keeps up (store/replica.ts).
   */
  DATABASE_READ_URL: optional(
    z
      .string()
      .trim()
      .refine(
        isUrlMatching(/^postgres(ql)?:\/\//i),
        'must be a PostgreSQL URL such as postgres://user:password@replica.internal:5432/school',
      )
      .optional(),
  ),
  /** The replica behind the primary by more than this: its reads go to the primary until it catches up. */
  DATABASE_READ_MAX_LAG: optional(duration.default(30_000)),
  CONSOLE_DIR: optional(z.string().optional()),
  RETENTION_DAYS: optional(integer(1, 36_500).default(400)),
  /**
   * PostgreSQL: a partition of calls, deliveries and attempts per `day` or per `month` (UTC,
   * store/partitions.ts). Retention drops whole periods, so history is kept up to one period longer
   * than RETENTION_DAYS. `day` above about a million calls a day (docs/deployment.md#partitions).
   */
  PARTITION_PERIOD: optional(z.enum(PARTITION_PERIODS).default('month')),
  AUTHCODE_TTL: optional(duration.default(600_000)),
  AUTHCODE_LIMIT_PER_PHONE: optional(rateLimit.default({ max: 5, windowMs: 15 * 60_000 })),
  AUTHCODE_LIMIT_PER_IP: optional(rateLimit.default({ max: 30, windowMs: 60_000 })),
  AUTHCODE_LIMIT_PER_COUNTRY: optional(rateLimit.default(null)),
  /**
   * Codes to the numbers of one range (all but the last RANGE_DIGITS digits, limits/authcode.ts):
   * SMS pumping walks consecutive numbers, which no per-phone limit sees.
   */
  AUTHCODE_LIMIT_PER_RANGE: optional(rateLimit.default({ max: 10, windowMs: 3_600_000 })),
  /**
   * The countries (ISO 3166 regions) AuthCode sends SMS to; `*` or `any`: every one. Unset: the
   * country of DEFAULT_PHONE_REGION when that is set, else every one (with a warning at start).
   */
  SMS_ALLOWED_COUNTRIES: optional(
    z.preprocess(
      (v) => (typeof v === 'string' && /^\s*(\*|any)\s*$/i.test(v) ? null : v),
      list(/[,\s]+/)
        .transform((regions) => regions.map((r) => r.toUpperCase()))
        .refine((regions) => regions.length > 0 && regions.every(isValidRegion), {
          message: 'must be ISO 3166 region codes such as GB,IE, or * for every country',
        })
        .nullable()
        .optional(),
    ),
  ),
  /** `on`: codes may go to fixed lines too (read out by voice where the network does so); mobiles always. */
  SMS_ALLOW_FIXED_LINE: optional(lowerEnum(['on', 'off']).default('off')),
  // The lanes' concurrency is read as smsConcurrency and pushConcurrency (derive, below).
  /** Older name: both kinds' concurrency, where SMS_CONCURRENCY / PUSH_CONCURRENCY are not set. */
  DISPATCH_CONCURRENCY: optional(integer(1, 1024).optional()),
  /** SMS provider requests under way at once (a gateway answering in 100 ms needs 100 for 1 000/s; 200 by default, twice that). */
  SMS_CONCURRENCY: optional(integer(1, 1024).optional()),
  /** Push provider requests under way at once (32 by default). */
  PUSH_CONCURRENCY: optional(integer(1, 1024).optional()),
  /** SMS sends started per second at most (the provider's rate limit), or `off`. */
  SMS_RATE_LIMIT: optional(perSecond.default(null)),
  /** Push sends started per second at most, or `off`. */
  PUSH_RATE_LIMIT: optional(perSecond.default(null)),
  DELIVERY_MAX_ATTEMPTS: optional(integer(1, 100).default(8)),
  DELIVERY_RETRY_BASE_MS: optional(integer(1, 3_600_000).default(2000)),
  DELIVERY_RETRY_MAX_MS: optional(integer(1, 86_400_000).default(600_000)),
  DISPATCH_POLL_MS: optional(integer(10, 600_000).default(1000)),
  /**
   * With SMS_FALLBACK_PROVIDER: a code the primary has not answered within this long is sent by
   * the fallback too, so it may arrive twice (docs/outbox.md#the-hedge); `off`: never.
   */
  SMS_HEDGE_AFTER: optional(
    z
      .string()
      .trim()
      .toLowerCase()
      .transform((v, ctx): number | null => {
        if (v === 'off') return null;
        const ms = duration.safeParse(v);
        if (!ms.success || ms.data < 100) {
          ctx.addIssue({
            code: 'custom',
            message: 'must be a duration of 100ms or more such as 2s or 2500ms, or off',
          });
          return z.NEVER;
        }
        return ms.data;
      })
      .default(2000),
  ),
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
    list(/,/)
      .transform((hosts) => hosts.map((h) => h.toLowerCase()))
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

/** The variables as read. */
type Settings = z.output<typeof configSchema>;

/**
 * Values derived from the settings, computed here once so that no reader repeats the rule (and
 * the tests can check it): the camelCase fields of Config.
 */
export interface DerivedConfig {
  /** DATA_DIR resolved to an absolute path. */
  readonly dataDir: string;
  /** CONSOLE_DIR resolved: the built console's folder. */
  readonly consoleDir: string;
  /** The SMS lane's concurrency: SMS_CONCURRENCY, else DISPATCH_CONCURRENCY, else 200. */
  readonly smsConcurrency: number;
  /** The push lane's concurrency: PUSH_CONCURRENCY, else DISPATCH_CONCURRENCY, else 32. */
  readonly pushConcurrency: number;
  /**
   * The outbox's lease on a delivery being sent, 3 × PROVIDER_TIMEOUT_MS + 5 s (35 s by default):
   * longer than any attempt can take, each being bounded by the provider timeout.
   */
  readonly deliveryLeaseMs: number;
  /**
   * The countries AuthCode sends to: SMS_ALLOWED_COUNTRIES, else DEFAULT_PHONE_REGION's, else
   * null (every country).
   */
  readonly smsAllowedCountries: readonly string[] | null;
}

function derive(settings: Settings): DerivedConfig {
  return {
    dataDir: path.resolve(settings.DATA_DIR),
    consoleDir: path.resolve(settings.CONSOLE_DIR ?? DEFAULT_CONSOLE_DIR),
    smsConcurrency: settings.SMS_CONCURRENCY ?? settings.DISPATCH_CONCURRENCY ?? 200,
    pushConcurrency: settings.PUSH_CONCURRENCY ?? settings.DISPATCH_CONCURRENCY ?? 32,
    deliveryLeaseMs: settings.PROVIDER_TIMEOUT_MS * 3 + 5000,
    smsAllowedCountries:
      settings.SMS_ALLOWED_COUNTRIES !== undefined
        ? settings.SMS_ALLOWED_COUNTRIES
        : settings.DEFAULT_PHONE_REGION
          ? [settings.DEFAULT_PHONE_REGION]
          : null,
  };
}

/** The validated configuration: the variables, and the values derived from them. */
export type Config = Settings & DerivedConfig;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Every variable, then the checks spanning several, then the derived values. */
const loadSchema = configSchema
  .superRefine(checkProviderConfig)
  .superRefine(checkIdentityConfig)
  .superRefine((c, ctx) => {
    const issue = issuesOn(ctx);
    if (c.DATABASE_URL !== undefined && c.CODE_ENCRYPTION_KEY === undefined) {
      issue(
        'CODE_ENCRYPTION_KEY',
        'is required with DATABASE_URL: every instance sharing the database must seal auth codes with the same key (generate one with `openssl rand -base64 32`)',
      );
    }
    if (c.DATABASE_READ_URL !== undefined && c.DATABASE_URL === undefined) {
      issue(
        'DATABASE_READ_URL',
        'needs DATABASE_URL: a read replica is of a PostgreSQL primary, and SQLite has none (unset DATABASE_READ_URL, or set DATABASE_URL to the primary)',
      );
    }
    if (c.DATABASE_READ_URL !== undefined && c.DATABASE_READ_URL === c.DATABASE_URL) {
      issue('DATABASE_READ_URL', 'is DATABASE_URL: name the replica, or unset it to read from the primary');
    }
    if (c.DATABASE_READ_MAX_LAG < 1000) {
      issue(
        'DATABASE_READ_MAX_LAG',
        'must be at least 1s: the replica is checked up to 5 times in that span',
      );
    }
    if ((c.ADMIN_USERNAME === undefined) !== (c.ADMIN_PASSWORD === undefined)) {
      issue(
        c.ADMIN_USERNAME === undefined ? 'ADMIN_USERNAME' : 'ADMIN_PASSWORD',
        'ADMIN_USERNAME and ADMIN_PASSWORD go together',
      );
    }
  })
  .transform((settings): Config => ({ ...settings, ...derive(settings) }));

/** Validates the environment once; a bad value is an error naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = loadSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The validated configuration. */
    config: Config;
  }
}

/**
 * The configuration as the first plugin: the others declare that they need it. Beside the
 * settings rather than in plugins/, so that no folder below has to import the top one for the
 * type (`FastifyInstance['config']` names it).
 */
export const configPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    app.decorate('config', config);
  },
  { name: 'config' },
);
