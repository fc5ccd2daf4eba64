import { DELIVERY_STATES, type DeliveryList, type DeliveryState } from '@school/contract';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { ConfirmButton } from '../../../components/ui/confirm';
import { LiveToggle } from '../../../components/ui/live-toggle';
import { EmptyState, ErrorState, Loading, ProblemMessage } from '../../../components/ui/status';
import { paths } from '../../../config/paths';
import { DELIVERY_STATUS_LABELS } from '../../../lib/format';
import { type DeliveryFilters, queryKeys } from '../../../lib/query-keys';
import { useServiceInfo } from '../../../lib/service-info';
import { LIVE_INTERVAL_MS, useDeliveries } from '../api/get-deliveries';
import { type DeliveryCounts, fetchDeliveryCounts, useDeliveryCounts } from '../api/get-delivery-counts';
import { useRetryDeadDeliveries } from '../api/retry-dead';
import { filtersFromSearch, filtersToSearch, hasFilters, isOpenEnded } from '../utils/filters';
import { retryDeadMessage, retryDeadProgress } from '../utils/retry-dead-progress';
import { DeliveriesTable } from './deliveries-table';
import { FiltersForm } from './filters-form';
import '../deliveries.css';

export function DeliveriesPage() {
  const [searchParams, setSearchParams] = useSearchParams();
  const filters = filtersFromSearch(searchParams);
  // Live by default: the outbox changes on its own (sends, retries, deaths).
  const [live, setLive] = useState(true);
  const openEnded = isOpenEnded(filters);
  const deliveries = useDeliveries(filters, live && openEnded);
  const setFilters = (next: DeliveryFilters) => setSearchParams(filtersToSearch(next));
  const items = deliveries.data?.pages.flatMap((page) => page.items) ?? [];
  const counts = deliveries.data?.pages[0]?.counts;

  return (
    <div className="page deliveries-page">
      <title>Deliveries · School Messaging</title>
      <h1>Deliveries</h1>
      <p className="hint">
        The outbox: every SMS and push the operations queued, with their attempts. Dead ones can be retried.
      </p>
      <FiltersForm filters={filters} onChange={setFilters} />
      <div className="toolbar">
        <LiveToggle
          live={live}
          onToggle={() => setLive((on) => !on)}
          title="Refresh the list and its counts as deliveries change"
          status={
            !live
              ? ''
              : !openEnded
                ? 'Not refreshing: this view ends in the past.'
                : deliveries.isRefetchError
                  ? `Could not refresh the list; trying again in ${LIVE_INTERVAL_MS / 1000} seconds.`
                  : `Refreshing every ${LIVE_INTERVAL_MS / 1000} seconds while this page is shown.`
          }
        />
      </div>
      <div className="toolbar">
        {counts ? <StatusCounts counts={counts} filters={filters} /> : null}
        <span className="toolbar-spacer" />
        <RetryDead dead={counts?.dead} />
      </div>

      {deliveries.isPending ? (
        <Loading>Loading deliveries…</Loading>
      ) : !deliveries.data ? (
        <ErrorState
          error={deliveries.error}
          title="Could not load the deliveries"
          onRetry={() => deliveries.refetch()}
        />
      ) : items.length === 0 ? (
        <EmptyState>
          {hasFilters(filters) ? 'No deliveries match these filters.' : 'Nothing has been queued yet.'}
        </EmptyState>
      ) : (
        <>
          <DeliveriesTable deliveries={items} />
          <div className="paging">
            {deliveries.hasNextPage ? (
              <button
                type="button"
                className="button"
                onClick={() => deliveries.fetchNextPage()}
                disabled={deliveries.isFetchingNextPage}
              >
                {deliveries.isFetchingNextPage ? 'Loading more…' : 'Load more'}
              </button>
            ) : (
              <p className="muted">
                {items.length === 1
                  ? 'This is the only delivery.'
                  : `All ${items.length} deliveries are shown.`}
              </p>
            )}
            {deliveries.isFetchNextPageError ? (
              <ErrorState
                error={deliveries.error}
                title="Could not load more"
                onRetry={() => deliveries.fetchNextPage()}
              />
            ) : null}
          </div>
        </>
      )}
    </div>
  );
}

/**
 * How many deliveries are in each status (all of them, whatever the filters), each a link to that
 * view. The `log` provider's are counted apart: they were never sent.
 */
function StatusCounts({ counts, filters }: { counts: DeliveryList['counts']; filters: DeliveryFilters }) {
  const href = (status?: DeliveryState) => {
    const search = filtersToSearch({ ...filters, status }).toString();
    return paths.deliveries.href(search ? `?${search}` : '');
  };
  // With a real provider nothing is ever logged: no "Logged, not sent 0" to puzzle over.
  const shown = DELIVERY_STATES.filter(
    (status) => status !== 'logged' || counts.logged > 0 || filters.status === 'logged',
  );
  return (
    <ul className="counts" aria-label="All deliveries by status">
      {shown.map((status) => (
        <li key={status}>
          <Link
            to={href(status)}
            className={`count count-${status}`}
            aria-current={filters.status === status ? 'true' : undefined}
          >
            {DELIVERY_STATUS_LABELS[status]} <strong>{counts[status]}</strong>
          </Link>
        </li>
      ))}
    </ul>
  );
}

function RetryDead({ dead }: { dead: number | undefined }) {
  const retry = useRetryDeadDeliveries();
  // The counts just before the retry: what its deliveries are followed against.
  const [before, setBefore] = useState<DeliveryCounts>();
  const [since, setSince] = useState(0);
  const retried = retry.data?.retried ?? 0;
  const following = before !== undefined && retried > 0;
  const settled = (now: DeliveryCounts | undefined) =>
    now !== undefined && before !== undefined && retryDeadProgress(before, retried, now).onTheirWay === 0;
  const counts = useDeliveryCounts(since, (now) => following && !settled(now), following);
  const refusing = useRefusing();
  const progress = following && counts.data ? retryDeadProgress(before, retried, counts.data) : undefined;
  const message = progress ? retryDeadMessage(retried, progress, refusing) : undefined;
  useReadListsOnChange(following ? counts.data : undefined);

  const confirm = async () => {
    // Without the counts before, the retry still goes; it is then not followed.
    setBefore(await fetchDeliveryCounts().catch(() => undefined));
    setSince(Date.now());
    await retry.mutateAsync();
  };
  return (
    <div className="retry-dead">
      {dead === undefined || dead === 0 ? (
        <button type="button" className="button" disabled title="There are no dead deliveries.">
          Retry all dead
        </button>
      ) : (
        // A bulk action sends real messages: it says how many, and acts only once confirmed.
        <ConfirmButton
          question={`Send ${dead === 1 ? 'the one dead delivery' : `all ${dead} dead deliveries`} again? Each goes to its recipient as a new attempt.`}
          confirmLabel={dead === 1 ? 'Yes, send it again' : `Yes, send ${dead} again`}
          pending={retry.isPending}
          onConfirm={confirm}
        >
          {retry.isPending ? 'Retrying…' : 'Retry all dead'}
        </ConfirmButton>
      )}
      <span role="status" className={`retry-result${message ? ` retry-result-${message.tone}` : ''}`}>
        {retry.data && retried === 0
          ? 'There were no dead deliveries to retry.'
          : (message?.text ?? (retry.data && !before ? `${retried} retried.` : ''))}
      </span>
      {retry.isError ? <ProblemMessage error={retry.error} prefix="Not retried" /> : null}
    </div>
  );
}

/** The one provider refusing every message now, if one is: its words say why retries failed. */
function useRefusing() {
  const providers = useServiceInfo().data?.providers;
  const refusing = [providers?.sms, providers?.smsFallback, providers?.push].filter((p) => p?.refusing);
  return refusing.length === 1 ? refusing[0]?.refusing : undefined;
}

/** While a retry is followed, the list and its counter are read again as its counts change. */
function useReadListsOnChange(counts: DeliveryCounts | undefined) {
  const queryClient = useQueryClient();
  const key = counts ? JSON.stringify(counts) : '';
  useEffect(() => {
    if (key) void queryClient.invalidateQueries({ queryKey: queryKeys.deliveries.lists() });
  }, [key, queryClient]);
}
