import type { Delivery } from '@school/contract';
import { ProblemMessage } from '../../../components/ui/status';
import { DELIVERY_STATUS_LABELS } from '../../../lib/format';
import { useRetryDelivery } from '../api/retry-delivery';

/**
 * Retry for a dead delivery, with what came of it. The outcome stays shown after the delivery's
 * status changes (and the button goes), in a live region so it is announced.
 */
export function RetryDelivery({ delivery }: { delivery: Pick<Delivery, 'id' | 'status'> }) {
  const retry = useRetryDelivery();
  return (
    <div className="retry">
      {delivery.status === 'dead' ? (
        <button
          type="button"
          className="button button-small"
          disabled={retry.isPending}
          onClick={() => retry.mutate(delivery.id)}
        >
          {retry.isPending ? 'Retrying…' : 'Retry'}{' '}
          <span className="visually-hidden">delivery {delivery.id}</span>
        </button>
      ) : null}
      <div aria-live="polite">
        {retry.isSuccess ? (
          <p className="retry-result">
            Retried: delivery {retry.data.id} went back to{' '}
            {DELIVERY_STATUS_LABELS[retry.data.status].toLowerCase()}.
          </p>
        ) : null}
      </div>
      {retry.isError ? <ProblemMessage error={retry.error} prefix="Not retried" /> : null}
    </div>
  );
}
