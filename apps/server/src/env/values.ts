/**
 * The kinds of value an environment variable holds (a number in a range, a duration, a URL, a
 * list...), shared by the configuration's parts: config.ts, providers/config.ts, auth/config.ts.
 * Each is a zod schema reading the variable's text; the error messages are the ones printed at
 * start, after the variable's name. Nothing here knows a variable's name.
 */
import { isIpRange } from '@school/contract';
import { z } from 'zod';

/** An unset variable and an empty one (`PORT=` in a .env file) both mean "use the default". */
export const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), schema);

/** A whole number from `min` to `max`. */
export const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** One of `values`, read case-insensitively (`Twilio` is `twilio`). */
export const lowerEnum = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.string().trim().toLowerCase().pipe(z.enum(values));

/** A list split at `separators` (`/,/`, `/[\s,]+/`); entries trimmed, empty ones dropped. */
export const list = (separators: RegExp) =>
  z.string().transform((v) =>
    v
      .split(separators)
      .map((e) => e.trim())
      .filter(Boolean),
  );

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** `n` of `unit` (seconds when none) in milliseconds. */
const toMs = (n: string, unit: string | undefined) =>
  Number(n) * UNIT_MS[(unit ?? 's') as keyof typeof UNIT_MS];

/** A duration: seconds (`600`) or with a unit (`10m`, `90s`, `1h`), as milliseconds. */
export const duration = z
  .string()
  .trim()
  .regex(/^\d+(ms|s|m|h)?$/, 'must be a duration such as 600 (seconds), 90s, 10m or 1h')
  .transform((v) => {
    const [, n = '0', unit] = /^(\d+)(ms|s|m|h)?$/.exec(v) ?? [];
    return toMs(n, unit);
  });

/** A rate limit: `N/duration` (`5/15m`), or `off` (null). */
export const rateLimit = z
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
    return { max: Number(match[1]), windowMs: toMs(match[2] ?? '0', match[3]) };
  });

/** A rate in events per second (`50`), or `off` (null). */
export const perSecond = z
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
export const ipRanges = list(/,/).transform((entries, ctx): string[] => {
  const bad = entries.filter((e) => !isIpRange(e));
  if (bad.length > 0) {
    ctx.addIssue({ code: 'custom', message: `not IP addresses or CIDR ranges: ${bad.join(', ')}` });
    return z.NEVER;
  }
  return entries;
});

/** `*` or `any`: every address (null); otherwise a list of addresses or CIDR ranges. */
export const ipRangesOrAny = z.preprocess(
  (v) => (typeof v === 'string' && /^\s*(\*|any)\s*$/i.test(v) ? null : v),
  ipRanges.nullable(),
);

/** Whether `v` is a URL whose text `pattern` matches (`/^https?:\/\//i`: its scheme). */
export const isUrlMatching = (pattern: RegExp) => (v: string) => pattern.test(v) && URL.canParse(v);

/** Drops a base URL's trailing slashes: paths are appended to it. */
export const withoutTrailingSlash = (v: string) => v.replace(/\/+$/, '');

/** Any absolute URI (`urn:…` too); `example` is shown in the error. */
export const absoluteUrl = (example: string) =>
  z.string().refine((v) => URL.canParse(v), `must be an absolute URI, e.g. ${example}`);

/** An http or https URL; `example` is shown in the error. */
export const httpUrl = (example: string) =>
  z
    .string()
    .trim()
    .refine(isUrlMatching(/^https?:\/\//i), `must be an http(s) URL, e.g. ${example}`);

/** An http(s) base URL: paths are appended to it, so a trailing slash is dropped. */
export const baseUrl = (example: string) => httpUrl(example).transform(withoutTrailingSlash);

/**
 * For the checks that span several variables (a superRefine): reports an issue on the variable
 * to set or fix, printed as `VARIABLE: message`.
 */
export const issuesOn =
  (ctx: z.RefinementCtx) =>
  (variable: string, message: string): void =>
    ctx.addIssue({ code: 'custom', path: [variable], message });
