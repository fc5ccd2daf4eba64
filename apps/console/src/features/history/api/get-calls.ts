import { type CallDelivery, type CallFilters, type CallList, callListSchema } from '@school/contract';
import { infiniteQueryOptions, useInfiniteQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

export const PAGE_SIZE = 50;

/** GET /api/calls: one page, newest first; `cursor` is the previous page's nextCursor. */
export function getCalls(filters: CallFilters, cursor?: string, signal?: AbortSignal): Promise<CallList> {
  return request('/calls', {
    schema: callListSchema,
    query: { ...filters, limit: PAGE_SIZE, cursor },
    signal,
  });
}

/** How often the list is read again while a new call's SMS or push is still on its way. */
export const DELIVERY_REFRESH_MS = 5000;

/** Not settled yet: still to be sent, or not looked up (a call the live tail added). */
const onItsWay = (delivery: CallDelivery | null | undefined): boolean =>
  delivery === undefined ||
  delivery?.state === 'waiting' ||
  delivery?.state === 'retrying' ||
  delivery?.state === 'sending';

export const getCallsQueryOptions = (filters: CallFilters) =>
  infiniteQueryOptions({
    queryKey: queryKeys.calls.list(filters),
    queryFn: ({ pageParam, signal }) => getCalls(filters, pageParam, signal),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // A delivery's state changes after its call is listed (Waiting → Sent, or Dead): while one on
    // the first page is on its way, the list is read again, so "Sent" or "Dead" shows without a
    // reload. Not for free text, whose search is costly; not in a hidden tab (React Query's default).
    refetchInterval: (query) =>
      !filters.q && query.state.data?.pages[0]?.items.some((call) => onItsWay(call.delivery))
        ? DELIVERY_REFRESH_MS
        : false,
  });

export const useCalls = (filters: CallFilters) => useInfiniteQuery(getCallsQueryOptions(filters));
