import type { ProviderInfo } from '@school/contract';
import { useNow } from './clock';
import { formatClock } from './format';
import { useTimeZoneSetting } from './time-zone';

// A provider refusing the school's messages for good (its account suspended, its credentials
// refused), as Service, Send and the Dashboard say it: the server reads it from the attempts
// recorded (docs/outbox.md#a-provider-that-refuses).

export type Refusal = NonNullable<ProviderInfo['refusing']>;

/** What to do about it: no retry, by hand or by the outbox, gets past a refused account. */
export const REFUSAL_REMEDY = 'Fix the account with the provider; retries will not help until then.';

/** "account suspended (HTTP 403) since 10:42:05, 12 of the last 12": its words, since when, how often. */
export function refusalWords(refusal: Refusal, clock: (iso: string) => string): string {
  const status = refusal.status === null ? '' : ` (HTTP ${refusal.status})`;
  return `${refusal.reason}${status} since ${clock(refusal.since)}, ${refusal.refusals} of the last ${refusal.attempts}`;
}

/** `refusalWords` with the time in the reader's zone (and its date once it is not today). */
export function useRefusalWords(): (refusal: Refusal) => string {
  const zone = useTimeZoneSetting();
  const now = useNow();
  return (refusal) => refusalWords(refusal, (iso) => formatClock(iso, now, zone));
}
