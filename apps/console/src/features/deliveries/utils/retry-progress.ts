import type { Delivery } from '@school/contract';
import { plainFailure } from '../../../lib/plain-failure';

export type ProgressTone = 'pending' | 'ok' | 'warn' | 'error';

/**
 * What became of a retried delivery, said from where it is now (never from the retry's answer
 * alone): waiting, being sent, then sent, or failed again and why. So no "retried" stands beside
 * a status that says otherwise.
 */
export function retryProgress(d: Delivery): { text: string; tone: ProgressTone } {
  const why = d.lastError ? plainFailure(d.lastError) : undefined;
  switch (d.status) {
    case 'pending':
      return d.attempts === 0
        ? { text: 'Retried: waiting to be sent…', tone: 'pending' }
        : {
            text: `Retried: attempt ${d.attempts} failed${why ? `: ${why}` : ''}. It is tried again.`,
            tone: 'warn',
          };
    case 'sending':
      return { text: 'Retried: being sent…', tone: 'pending' };
    case 'sent':
      return { text: 'Retried and sent.', tone: 'ok' };
    case 'logged':
      return { text: `Retried: logged by the ${d.provider} provider, not sent.`, tone: 'warn' };
    case 'dead':
      return { text: `Failed again${why ? `: ${why}` : ''}.`, tone: 'error' };
    case 'expired':
      return { text: 'Failed again: not sent within its validity.', tone: 'error' };
  }
}

/**
 * The newest of what is known of a delivery (the list's row, the retry's answer, the delivery
 * followed since): a list read before the retry still says dead.
 */
export function newest(...seen: (Delivery | undefined)[]): Delivery | undefined {
  let found: Delivery | undefined;
  for (const d of seen) {
    if (d && (!found || Date.parse(d.updatedAt) > Date.parse(found.updatedAt))) found = d;
  }
  return found;
}
