import type { Delivery, DeliveryState } from '@school/contract';
import { DELIVERY_KIND_LABELS, DELIVERY_STATUS_LABELS } from '../../lib/format';

/** A delivery's status as a badge coloured by it ("Logged, not sent"). */
export function DeliveryStatusBadge({ status }: { status: DeliveryState }) {
  return <span className={`badge badge-delivery-${status}`}>{DELIVERY_STATUS_LABELS[status]}</span>;
}

/** What a delivery is and who carries it: "SMS via twilio". */
export function DeliveryKindAndProvider({ delivery }: { delivery: Pick<Delivery, 'kind' | 'provider'> }) {
  return (
    <>
      {DELIVERY_KIND_LABELS[delivery.kind]} <span className="muted">via {delivery.provider}</span>
    </>
  );
}
