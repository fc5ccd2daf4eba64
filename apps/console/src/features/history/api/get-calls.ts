import { type CallFilters, type CallList, callListSchema } from '@school/contract';
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

export const getCallsQueryOptions = (filters: CallFilters) =>
  infiniteQueryOptions({
    queryKey: queryKeys.calls.list(filters),
    queryFn: ({ pageParam, signal }) => getCalls(filters, pageParam, signal),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });

export const useCalls = (filters: CallFilters) => useInfiniteQuery(getCallsQueryOptions(filters));
