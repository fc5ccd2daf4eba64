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

/** Up to this far from now, a time reads as relative ("3 min ago"); beyond it, as a date and time. */
export const RECENT_MS = 24 * 3_600_000;

// The console speaks English: its relative times too, whatever the reader's locale ("3 min ago").
const relative = new Intl.RelativeTimeFormat('en-GB', { style: 'short', numeric: 'always' });

/**
 * How long ago (or how soon) `iso` is from `now`, when within RECENT_MS: "just now", "3 min ago",
 * "2 hr ago", "in 5 min". Undefined when further away, or not a time.
 */
export function formatRelative(iso: string, now: number): string | undefined {
  const date = parse(iso);
  if (!date) return undefined;
  const ms = date.getTime() - now;
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

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
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
