import type { Delivery, ProviderInfo } from '@school/contract';
import { useRef } from 'react';
import { useLocation } from 'react-router';
import { DeliveryKindAndProvider, DeliveryStatusBadge } from '../../../components/ui/delivery';
import { RecordLink } from '../../../components/ui/record-link';
import { Timestamp } from '../../../components/ui/timestamp';
import { truncate } from '../../../lib/format';
import { plainFailure } from '../../../lib/plain-failure';
import { useFocusOnReturn } from '../../../lib/return-focus';
import { useServiceInfo } from '../../../lib/service-info';
import { pausedProvider } from '../utils/failure';
import { RetryDelivery } from './retry-delivery';

function Message({ delivery }: { delivery: Delivery }) {
  const full = delivery.title ? `${delivery.title}: ${delivery.text}` : delivery.text;
  return (
    <span title={full}>
      {delivery.title ? <strong>{truncate(delivery.title, 40)}</strong> : null}
      {delivery.title ? ' ' : null}
      {truncate(delivery.text, 80)}
    </span>
  );
}

/**
 * When a waiting delivery is tried next: while its provider is paused, that it is paused and until
 * when (a bare "1 min ago" would read as a fault of the list).
 */
function NextAttempt({ delivery: d, paused }: { delivery: Delivery; paused: ProviderInfo | undefined }) {
  if (!d.nextAttemptAt || (d.status !== 'pending' && d.status !== 'sending')) {
    return <span className="muted">—</span>;
  }
  if (d.status === 'pending' && paused) {
    return (
      <span className="paused">
        Paused
        {paused.circuit.until ? (
          <>
            {' '}
            until <Timestamp iso={paused.circuit.until} variant="clock" />
          </>
        ) : null}
      </span>
    );
  }
  return <Timestamp iso={d.nextAttemptAt} due />;
}

export function DeliveriesTable({ deliveries }: { deliveries: readonly Delivery[] }) {
  const location = useLocation();
  const wrap = useRef<HTMLDivElement>(null);
  useFocusOnReturn(wrap);
  const providers = useServiceInfo().data?.providers;
  return (
    <div className="table-wrap" ref={wrap}>
      <table className="deliveries cards">
        <caption className="visually-hidden">Deliveries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">ID</th>
            <th scope="col">Kind</th>
            <th scope="col">Recipient</th>
            <th scope="col" className="col-optional">
              Message
            </th>
            <th scope="col">Status</th>
            <th scope="col" className="numeric col-optional">
              Attempts
            </th>
            <th scope="col">Queued</th>
            <th scope="col" className="col-optional">
              Next attempt
            </th>
            <th scope="col" className="col-optional">
              Last error
            </th>
            <th scope="col" className="col-optional">
              Call
            </th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((d) => (
            <tr key={d.id}>
              <td data-label="ID">
                {/* The list's filters travel with the link, so "Back to Deliveries" returns to this view. */}
                <RecordLink
                  record="delivery"
                  id={d.id}
                  state={{ search: location.search }}
                  data-record={d.id}
                />
              </td>
              <td data-label="Kind">
                <DeliveryKindAndProvider delivery={d} />
              </td>
              <td data-label="Recipient">
                <code className="key">{d.recipient}</code>
              </td>
              <td className="col-optional" data-label="Message">
                <Message delivery={d} />
              </td>
              <td data-label="Status">
                <DeliveryStatusBadge status={d.status} />
              </td>
              <td className="numeric col-optional" data-label="Attempts">
                {d.attempts}
              </td>
              <td data-label="Queued">
                <Timestamp iso={d.createdAt} variant="clock" />
              </td>
              <td className="col-optional" data-label="Next attempt">
                <NextAttempt delivery={d} paused={pausedProvider(d.provider, providers)} />
              </td>
              {/* On a phone, the error when there is one: it says why the delivery is not sent yet. */}
              <td className={d.lastError ? undefined : 'col-optional'} data-label="Last error">
                {d.lastError ? (
                  <span className="call-error" title={d.lastError}>
                    {truncate(plainFailure(d.lastError), 80)}
                  </span>
                ) : (
                  <span className="muted">—</span>
                )}
              </td>
              <td className="col-optional" data-label="Call">
                <RecordLink record="call" id={d.callId} />
              </td>
              <td className="cell-actions">
                <RetryDelivery delivery={d} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
