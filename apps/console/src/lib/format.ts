import type { DeliveryKind, DeliveryStatus, Outcome, Role } from '@school/contract';

const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

/** A timestamp in the reader's locale and time zone. */
export function formatDateTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
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

export const DELIVERY_STATUS_LABELS: Record<DeliveryStatus, string> = {
  pending: 'Pending',
  sending: 'Sending',
  sent: 'Sent',
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
