import type { Delivery } from '@school/contract';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { ProblemMessage } from '../../../components/ui/status';
import { queryKeys } from '../../../lib/query-keys';
import { getDeliveryQueryOptions } from '../api/get-delivery';
import { useRetryDelivery } from '../api/retry-delivery';
import { newest, retryProgress } from '../utils/retry-progress';

/**
 * Retry for a dead delivery, then what comes of it: the delivery is followed (its page's query,
 * read closely while it is on its way) and the message says where it is now, until it is sent or
 * fails again. In a live region, so each change is announced.
 */
export function RetryDelivery({ delivery }: { delivery: Delivery }) {
  const retry = useRetryDelivery();
  const followed = useQuery({ ...getDeliveryQueryOptions(delivery.id), enabled: retry.isSuccess });
  const now = (retry.isSuccess ? newest(delivery, retry.data, followed.data) : undefined) ?? delivery;
  useCatchUp(delivery, now);
  const progress = retry.isSuccess ? retryProgress(now) : undefined;
  return (
    <div className="retry">
      {now.status === 'dead' ? (
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
        {progress ? <p className={`retry-result retry-result-${progress.tone}`}>{progress.text}</p> : null}
      </div>
      {retry.isError ? <ProblemMessage error={retry.error} prefix="Not retried" /> : null}
    </div>
  );
}

/**
 * Once the followed delivery has moved past what `shown` (a list's row) says, the lists are read
 * again, so the row's status and the page's counts say what the message says.
 */
function useCatchUp(shown: Delivery, now: Delivery) {
  const queryClient = useQueryClient();
  const behind = now !== shown && now.status !== shown.status;
  const key = `${now.status}:${now.updatedAt}`;
  useEffect(() => {
    if (behind) void queryClient.invalidateQueries({ queryKey: queryKeys.deliveries.lists() });
  }, [behind, key, queryClient]);
}
