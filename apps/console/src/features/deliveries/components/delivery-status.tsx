import type { DeliveryStatus } from '@school/contract';
import { DELIVERY_STATUS_LABELS } from '../../../lib/format';

export function DeliveryStatusBadge({ status }: { status: DeliveryStatus }) {
  return <span className={`badge badge-delivery-${status}`}>{DELIVERY_STATUS_LABELS[status]}</span>;
}

/** What each status means, for the detail view. */
export const STATUS_EXPLANATIONS: Record<DeliveryStatus, string> = {
  pending: 'Waiting for the dispatcher (a first try, or a retry after a transient error).',
  sending: 'The dispatcher is sending it now.',
  sent: 'The provider accepted it.',
  dead: 'Given up: a permanent error, or every attempt failed. Retry puts it back in the queue.',
  expired: 'Not delivered within its validity (an auth code is never sent late). It cannot be retried.',
};
