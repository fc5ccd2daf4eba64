import type { AttemptOutcome, DeliveryState, PRIVACY_CALL_FIELDS, PrivacyErasure } from '@school/contract';

type HeldIn = (typeof PRIVACY_CALL_FIELDS)[number];

/** Where a call holds the number, in words. */
export const HELD_IN_LABELS: Record<HeldIn, string> = {
  phone: 'the number it was for',
  params: 'parameters',
  request: 'raw request',
  response: 'raw response',
  error: 'error message',
  note: 'note',
};

/** "Parameters, raw request and note". */
export function heldInWords(fields: readonly HeldIn[]): string {
  const words = fields.map((f) => HELD_IN_LABELS[f]);
  const text = new Intl.ListFormat('en-GB', { type: 'conjunction' }).format(words);
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export const ATTEMPT_OUTCOME_LABELS: Record<AttemptOutcome | 'running', string> = {
  sent: 'Sent',
  transient: 'Transient error',
  permanent: 'Permanent error',
  interrupted: 'Interrupted',
  running: 'Under way',
};

/** The statuses of a delivery not finished yet: an erasure cancels these first. */
export const ON_THEIR_WAY: ReadonlySet<DeliveryState> = new Set(['pending', 'sending']);

/** "1 call", "3 calls". */
export const count = (n: number, one: string, many = `${one}s`): string =>
  `${n.toLocaleString('en-GB')} ${n === 1 ? one : many}`;

/** What the erasure did so that the disk no longer holds the number, in words. */
export function diskWords({ walTruncated, vacuumed }: PrivacyErasure['disk']): string {
  if (walTruncated === true)
    return 'SQLite: freed pages overwritten, and the write-ahead log checkpointed and truncated.';
  if (walTruncated === false)
    return 'SQLite: freed pages overwritten, but the write-ahead log could not be truncated yet (a reader held it): its old pages go at the next checkpoint.';
  if (vacuumed.length === 0) return 'PostgreSQL: no table needed a VACUUM.';
  return `PostgreSQL: VACUUM run on ${vacuumed.join(', ')} (the old rows' space is freed for reuse; it is overwritten only as new rows take it).`;
}
