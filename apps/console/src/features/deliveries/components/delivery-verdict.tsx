import type { DeliveryDetail } from '@school/contract';
import { Timestamp } from '../../../components/ui/timestamp';
import { plainFailure } from '../../../lib/plain-failure';
import { useServiceInfo } from '../../../lib/service-info';
import { pausedProvider } from '../utils/failure';

/**
 * What became of a delivery that has not gone out, in one sentence first: why (the provider's
 * own reason, in plain words), whether it is tried again and when, and that sending is paused and
 * until when while its provider's circuit is open. Nothing for one that was sent or is waiting
 * for its first attempt with nothing wrong.
 */
export function DeliveryVerdict({ delivery: d }: { delivery: DeliveryDetail }) {
  const service = useServiceInfo();
  const paused = pausedProvider(d.provider, service.data?.providers);
  const why = d.lastError ? plainFailure(d.lastError) : undefined;
  const what = d.kind === 'sms' ? 'SMS' : 'push notification';

  const pause = paused ? (
    <p>
      Sending through {paused.id} is paused after repeated failures
      {paused.circuit.until ? (
        <>
          {' '}
          until <Timestamp iso={paused.circuit.until} variant="clock" />
        </>
      ) : null}
      ; then it is tried again by itself.
    </p>
  ) : null;

  if (d.status === 'dead') {
    return (
      <div className="status status-error delivery-verdict" role="status">
        <p className="status-title">This {what} was not sent</p>
        <p>{why ? `${why}. ` : ''}It is not tried again by itself: retry it below once the cause is fixed.</p>
      </div>
    );
  }
  if (d.status === 'expired') {
    return (
      <div className="status status-warning delivery-verdict" role="status">
        <p className="status-title">This code was not sent in time</p>
        <p>
          {why ? `${why}. ` : ''}An auth code is never sent after its validity: the parent needs a new one.
        </p>
      </div>
    );
  }
  if (d.status === 'pending' && (why || paused)) {
    return (
      <div className="status status-warning delivery-verdict" role="status">
        <p className="status-title">Not sent yet</p>
        {why ? (
          <p>
            The last try failed: {why}.
            {d.nextAttemptAt && !paused ? (
              <>
                {' '}
                Next try <Timestamp iso={d.nextAttemptAt} variant="recent" due />.
              </>
            ) : null}
          </p>
        ) : null}
        {pause}
      </div>
    );
  }
  return null;
}
