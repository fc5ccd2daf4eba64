import type { DeliveryKind, DeliveryState, Outcome, Role } from '@school/contract';
import { getTimeZoneSetting, type TimeZoneSetting } from './time-zone';

const DATE_TIME: Intl.DateTimeFormatOptions = {
  year: 'numeric',
  month: 'short',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
};

// Making a formatter costs far more than using one: one per locale and zone, made when first used.
const formatters = new Map<string, Intl.DateTimeFormat>();
function dateTimeFormat(zone: TimeZoneSetting, locale: string | undefined): Intl.DateTimeFormat {
  const key = `${locale ?? ''}|${zone}`;
  let format = formatters.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat(locale, { ...DATE_TIME, timeZone: zone === 'utc' ? 'UTC' : undefined });
    formatters.set(key, format);
  }
  return format;
}

const parse = (iso: string): Date | undefined => {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? undefined : date;
};

/**
 * A timestamp in the reader's locale, in their time zone or UTC (the console's setting unless
 * `zone` is given), always with the zone's name: "23 Nov 2026, 18:09:49 UTC".
 */
export function formatDateTime(
  iso: string,
  zone: TimeZoneSetting = getTimeZoneSetting(),
  locale?: string,
): string {
  const date = parse(iso);
  return date ? dateTimeFormat(zone, locale).format(date) : iso;
}

/** The exact instant in UTC, to the millisecond, as exports and the server's log have it: "2026-11-23 18:09:49.123 UTC". */
export function formatUtcExact(iso: string): string {
  const date = parse(iso);
  return date ? `${date.toISOString().replace('T', ' ').replace('Z', '')} UTC` : iso;
}

const CLOCK: Intl.DateTimeFormatOptions = { hour: '2-digit', minute: '2-digit', second: '2-digit' };
const clockFormatters = new Map<string, Intl.DateTimeFormat>();
function clockFormat(zone: TimeZoneSetting, locale: string | undefined, date: 'none' | 'day' | 'year') {
  const key = `${locale ?? ''}|${zone}|${date}`;
  let format = clockFormatters.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat(locale, {
      ...CLOCK,
      ...(date === 'none' ? {} : { day: 'numeric', month: 'short' }),
      ...(date === 'year' ? { year: 'numeric' } : {}),
      timeZone: zone === 'utc' ? 'UTC' : undefined,
      ...(zone === 'utc' ? { timeZoneName: 'short' } : {}),
    });
    clockFormatters.set(key, format);
  }
  return format;
}

/**
 * A time to read down a list and compare: "08:05:12" today, "23 Nov, 08:05:12" earlier this
 * year, "23 Nov 2025, 08:05:12" before; in the reader's zone, or UTC (then named) as they chose.
 */
export function formatClock(
  iso: string,
  now: number,
  zone: TimeZoneSetting = getTimeZoneSetting(),
  locale?: string,
): string {
  const date = parse(iso);
  if (!date) return iso;
  const day = (d: Date) => clockFormat(zone, 'en-CA', 'year').formatToParts(d);
  const part = (parts: Intl.DateTimeFormatPart[], type: string) => parts.find((p) => p.type === type)?.value;
  const [a, b] = [day(date), day(new Date(now))];
  const sameYear = part(a, 'year') === part(b, 'year');
  const sameDay = sameYear && part(a, 'month') === part(b, 'month') && part(a, 'day') === part(b, 'day');
  return clockFormat(zone, locale, sameDay ? 'none' : sameYear ? 'day' : 'year').format(date);
}

/** Up to this far from now, a time reads as relative ("3 min ago"); beyond it, as a date and time. */
export const RECENT_MS = 24 * 3_600_000;

// The console speaks English: its relative times too, whatever the reader's locale ("3 min ago").
const relative = new Intl.RelativeTimeFormat('en-GB', { style: 'short', numeric: 'always' });

/**
 * How long ago (or how soon) `iso` is from `now`, when within RECENT_MS: "just now", "3 min ago",
 * "2 hr ago", "in 5 min". Undefined when further away, or not a time. `past`: `iso` is of something
 * that happened, so a time ahead of `now` (clock skew) is "just now".
 */
export function formatRelative(
  iso: string,
  now: number,
  options: { readonly past?: boolean } = {},
): string | undefined {
  const date = parse(iso);
  if (!date) return undefined;
  // Something that has happened (a call received, a template saved) is never "in a minute": a
  // server clock a little ahead of the browser's would say so.
  const ms = options.past ? Math.min(0, date.getTime() - now) : date.getTime() - now;
  const away = Math.abs(ms);
  if (away >= RECENT_MS) return undefined;
  if (away < 60_000) return ms <= 0 ? 'just now' : 'in under a minute';
  // Whole units, counted towards now: 59 s short of 2 hours is "1 hr ago".
  const [value, unit]: [number, Intl.RelativeTimeFormatUnit] =
    away < 3_600_000 ? [Math.trunc(ms / 60_000), 'minute'] : [Math.trunc(ms / 3_600_000), 'hour'];
  return relative.format(value, unit);
}

export function formatDuration(ms: number): string {
  if (ms < 1) return '<1 ms';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** A size as staff read one: `512 B`, `4.2 KB`, `79.6 GB` (powers of 1024, one decimal). */
export function formatBytes(bytes: number): string {
  const units = ['KB', 'MB', 'GB', 'TB'];
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export const OUTCOME_LABELS: Record<Outcome, string> = {
  ok: 'OK',
  'client-error': 'Client error',
  'server-error': 'Server error',
};

/** Every status the API answers; `logged` is the `log` provider's: nothing was sent. */
export const DELIVERY_STATUS_LABELS: Record<DeliveryState, string> = {
  pending: 'Pending',
  sending: 'Sending',
  sent: 'Sent',
  logged: 'Logged, not sent',
  dead: 'Dead',
  expired: 'Expired',
};

export const DELIVERY_KIND_LABELS: Record<DeliveryKind, string> = { sms: 'SMS', push: 'Push' };

/** `value` shortened to `max` characters with an ellipsis. */
export function truncate(value: string, max = 40): string {
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}

/** A role in one word, for the header and tables (the contract's ROLE_LABELS say what each may do). */
export const ROLE_NAMES: Record<Role, string> = { admin: 'Admin', operator: 'Operator' };
