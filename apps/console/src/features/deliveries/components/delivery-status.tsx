import type { DeliveryState } from '@school/contract';

/** What each status means, for the detail view. */
export const STATUS_EXPLANATIONS: Record<DeliveryState, string> = {
  pending: 'Waiting for the dispatcher (a first try, or a retry after a transient error).',
  sending: 'The dispatcher is sending it now.',
  sent: 'The provider accepted it.',
  logged:
    "Nothing was sent: the log provider wrote it to the server's log. Set SMS_PROVIDER or PUSH_PROVIDER to send for real.",
  dead: 'Given up: a permanent error, or every attempt failed. Retry puts it back in the queue.',
  expired: 'Not delivered within its validity (an auth code is never sent late). It cannot be retried.',
};
