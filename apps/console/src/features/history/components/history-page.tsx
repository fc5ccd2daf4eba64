import type { CallCount, CallFilters } from '@school/contract';
import { useEffect, useState } from 'react';
import { useSearchParams } from 'react-router';
import { LiveToggle } from '../../../components/ui/live-toggle';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { useCallsStream } from '../api/calls-stream';
import { exportCallsUrl } from '../api/export-calls';
import { useCallCount } from '../api/get-call-count';
import { useCalls } from '../api/get-calls';
import { filtersFromSearch, filtersToSearch, formatCount, hasFilters } from '../utils/filters';
import { CallsTable } from './calls-table';
import { FiltersForm } from './filters-form';
import { PhoneSearched } from './phone-searched';
import { SearchStopped } from './search-stopped';
import '../history.css';

const STREAM_LABELS = {
  off: '',
  connecting: 'Connecting…',
  open: 'Listening for new calls.',
  reconnecting: 'Connection lost, reconnecting…',
  closed: 'The live tail stopped. Turn Live off and on to try again.',
} as const;

export function HistoryPage() {
  const [searchParams, setSearchParams] = useSearchParams();
  const filters = filtersFromSearch(searchParams);
  const [live, setLive] = useState(false);
  const calls = useCalls(filters);
  const stream = useCallsStream(filters, live);

  const count = useCallCount(filters);
  // New calls on the live tail change the total: counted again once they stop arriving for a second.
  const { refetch: recount } = count;
  useEffect(() => {
    if (stream.received === 0) return;
    const timer = setTimeout(() => void recount(), 1000);
    return () => clearTimeout(timer);
  }, [stream.received, recount]);

  // Between counts, the live tail's calls are added to the last count, so the total follows the
  // rows as they arrive (the recount a second later confirms it).
  const [counted, setCounted] = useState({ at: 0, received: 0 });
  if (count.dataUpdatedAt !== counted.at || stream.received < counted.received) {
    setCounted({ at: count.dataUpdatedAt, received: stream.received });
  }
  const arrived = Math.max(0, stream.received - counted.received);
  const total = count.data && arrived > 0 ? { ...count.data, count: count.data.count + arrived } : count.data;

  const setFilters = (next: CallFilters) => setSearchParams(filtersToSearch(next));
  const items = calls.data?.pages.flatMap((page) => page.items) ?? [];
  // A free-text search that ran out of time on its last page: say how far it got.
  const lastSearch = calls.data?.pages.at(-1)?.search;
  const stopped = lastSearch && !lastSearch.complete ? lastSearch : undefined;
  // A search text that was a phone number: its calls were looked up as the Phone filter does.
  const searchedPhone = calls.data?.pages[0]?.search?.phone;

  return (
    <div className="page history-page">
      <title>History · School Messaging</title>
      <h1>History</h1>
      {/* Past the filters' fields in one step, for whoever moves by keyboard. */}
      <a className="skip-link" href="#history-results">
        Skip to results
      </a>
      <FiltersForm filters={filters} onChange={setFilters} />
      <div id="history-results" tabIndex={-1}>
        <CallTotal count={total} filtered={hasFilters(filters)} />
        {searchedPhone ? <PhoneSearched phone={searchedPhone} filters={filters} /> : null}
      </div>

      <div className="toolbar">
        <LiveToggle
          live={live}
          onToggle={() => setLive((on) => !on)}
          title="Show new calls as they arrive"
          status={
            live ? `${STREAM_LABELS[stream.state]}${stream.received ? ` ${stream.received} new.` : ''}` : ''
          }
        />
        <span className="toolbar-spacer" />
        <a className="button" href={exportCallsUrl('csv', filters)} download>
          Export CSV
        </a>
        <a className="button" href={exportCallsUrl('json', filters)} download>
          Export JSON
        </a>
      </div>

      {calls.isPending ? (
        <Loading>Loading calls…</Loading>
      ) : !calls.data ? (
        <ErrorState error={calls.error} title="Could not load the history" onRetry={() => calls.refetch()} />
      ) : items.length === 0 && !stopped ? (
        <EmptyState>
          {hasFilters(filters) ? 'No calls match these filters.' : 'No calls recorded yet.'}
        </EmptyState>
      ) : (
        <>
          {items.length > 0 ? <CallsTable calls={items} /> : null}
          <div className="paging">
            {stopped && !calls.isFetchingNextPage ? (
              <SearchStopped search={stopped} found={items.length} />
            ) : null}
            {calls.hasNextPage ? (
              <button
                type="button"
                className="button"
                onClick={() => calls.fetchNextPage()}
                disabled={calls.isFetchingNextPage}
              >
                {calls.isFetchingNextPage ? 'Loading more…' : 'Load more'}
              </button>
            ) : (
              <p className="muted">
                {items.length === 1
                  ? 'This is the only call.'
                  : `All ${formatCount(items.length)} calls are shown.`}
              </p>
            )}
            {calls.isFetchNextPageError ? (
              <ErrorState
                error={calls.error}
                title="Could not load more"
                onRetry={() => calls.fetchNextPage()}
              />
            ) : null}
          </div>
        </>
      )}
    </div>
  );
}

/** How many calls the view holds, above the table ("more than 10,000" where counting stops). */
function CallTotal({ count, filtered }: { count: CallCount | undefined; filtered: boolean }) {
  // Nothing while counting, for free text (not counted), and when there is none (the list says so).
  const one = count?.count === 1 && !count.more;
  const text =
    !count || count.count === 0
      ? ''
      : `${count.more ? 'More than ' : ''}${formatCount(count.count)} ${one ? 'call' : 'calls'} ${filtered ? (one ? 'matches' : 'match') : 'recorded'}.`;
  return (
    <p className="calls-total" role="status">
      {text}
    </p>
  );
}
