import type { QueryClient } from '@tanstack/react-query';
import { filtersFromSearch } from '../utils/filters';
import { getCallQueryOptions } from './get-call';
import { getCallCountQueryOptions, isCounted } from './get-call-count';
import { getCallDeliveriesQueryOptions } from './get-call-deliveries';
import { getCallsQueryOptions } from './get-calls';

/** What History asks first, for the filters in `search`: the first page of calls and their count. */
export function prefetchHistory(queryClient: QueryClient, search: URLSearchParams): void {
  const filters = filtersFromSearch(search);
  void queryClient.prefetchInfiniteQuery(getCallsQueryOptions(filters));
  if (isCounted(filters)) void queryClient.prefetchQuery(getCallCountQueryOptions(filters));
}

/** What a call's page asks: the call and, at once rather than after it, the deliveries it queued. */
export function prefetchCall(queryClient: QueryClient, id: number): void {
  void queryClient.prefetchQuery(getCallQueryOptions(id));
  void queryClient.prefetchQuery(getCallDeliveriesQueryOptions(id));
}
