import type { AuditAction } from '@school/contract';

/**
 * An audit entry's details as lines of plain text: a change as `Field: from → to`, a fact as
 * `Field: value`. Shown as text only (never HTML), whatever the values hold.
 */
export function detailLines(
  details: Record<string, unknown> | null,
  action?: AuditAction,
): { key: string; text: string }[] {
  if (!details) return [];
  return Object.entries(details).map(([key, value]) => ({
    key,
    text: isChange(value)
      ? `${fieldName(key)}: ${show(value.from)} → ${show(value.to)}`
      : action === 'send' && key in SENT
        ? `${SENT[key]}: ${sentValue(key, value)}`
        : `${fieldName(key)}: ${show(value)}`,
  }));
}

/**
 * A Send's entry says what was true when it was sent (packages/contract/src/verdict.ts): the
 * call's verdict then. Entries written before it was kept have the wire's outcome, in words.
 */
const SENT: Readonly<Record<string, string>> = { result: 'Result when sent', outcome: 'Result when sent' };
const OUTCOME_WORDS: Readonly<Record<string, string>> = {
  ok: 'Answered',
  'client-error': 'Refused',
  'server-error': 'Failed',
};
const sentValue = (key: string, value: unknown): string =>
  key === 'outcome' && typeof value === 'string' ? (OUTCOME_WORDS[value] ?? value) : show(value);

function isChange(value: unknown): value is { from: unknown; to: unknown } {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    'from' in value &&
    'to' in value &&
    Object.keys(value).length === 2
  );
}

/** `displayName` → "Display name", `allowed_ips` → "Allowed ips". */
function fieldName(key: string): string {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .toLowerCase()
    .trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function show(value: unknown): string {
  if (value === null || value === undefined || value === '') return '(none)';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  if (Array.isArray(value)) return value.length === 0 ? '(none)' : value.map(show).join(', ');
  return JSON.stringify(value);
}
