import type { Delivery } from '@school/contract';
import { Link } from 'react-router';
import { DeliveryStatusBadge } from '../../../components/ui/delivery';
import { ErrorState, Loading } from '../../../components/ui/status';
import { Timestamp } from '../../../components/ui/timestamp';
import { paths } from '../../../config/paths';
import { DELIVERY_KIND_LABELS, truncate } from '../../../lib/format';
import { useCallDeliveries } from '../api/get-call-deliveries';

/** The SMS and pushes a call queued, oldest first, each linking to its attempts in Deliveries. */
export function CallDeliveries({ callId }: { callId: number }) {
  const deliveries = useCallDeliveries(callId);
  return (
    <section aria-labelledby="call-deliveries-heading" className="call-deliveries">
      <h2 id="call-deliveries-heading">Deliveries</h2>
      {deliveries.isPending ? (
        <Loading>Loading the deliveries of call #{callId}…</Loading>
      ) : deliveries.isError ? (
        <ErrorState
          error={deliveries.error}
          title="Could not load the deliveries"
          onRetry={() => deliveries.refetch()}
        />
      ) : deliveries.data.items.length === 0 ? (
        <p className="muted">This call queued no SMS or push.</p>
      ) : (
        <ol className="timeline">
          {[...deliveries.data.items].reverse().map((d) => (
            <DeliveryItem key={d.id} delivery={d} />
          ))}
        </ol>
      )}
    </section>
  );
}

function DeliveryItem({ delivery: d }: { delivery: Delivery }) {
  return (
    <li className={`timeline-item timeline-delivery-${d.status}`}>
      <h3 className="timeline-title">
        <Link to={paths.delivery.href(d.id)}>
          Delivery #{d.id}: {DELIVERY_KIND_LABELS[d.kind]} to {d.recipient}
        </Link>{' '}
        <DeliveryStatusBadge status={d.status} />
      </h3>
      <p className="timeline-meta">
        Queued <Timestamp iso={d.createdAt} variant="clock" />
        {d.sentAt ? (
          <>
            {' '}
            · {d.status === 'logged' ? 'logged' : 'sent'} <Timestamp iso={d.sentAt} variant="clock" />
          </>
        ) : null}{' '}
        · {d.attempts === 1 ? 'one attempt' : `${d.attempts} attempts`} through {d.provider}
      </p>
      <p className="timeline-text">
        {d.title ? <strong>{d.title} </strong> : null}
        {truncate(d.text, 160)}
      </p>
      {d.lastError ? <p className="call-error">{d.lastError}</p> : null}
    </li>
  );
}
