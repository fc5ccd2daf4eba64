import { type CallCount, type CallFilters, callCountSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

/** GET /api/calls/count: how many calls the filters match, up to the server's bound. */
export function getCallCount(filters: CallFilters, signal?: AbortSignal): Promise<CallCount> {
  return request('/calls/count', { schema: callCountSchema, query: { ...filters }, signal });
}

export const getCallCountQueryOptions = (filters: CallFilters) =>
  queryOptions({
    queryKey: [...queryKeys.calls.all, 'count', filters] as const,
    queryFn: ({ signal }) => getCallCount(filters, signal),
  });

/** Whether a History view is counted: free-text searches are not (their search runs on a budget). */
export const isCounted = (filters: CallFilters): boolean => !filters.q;

/** The total of a History view, when it is counted. */
export const useCallCount = (filters: CallFilters) =>
  useQuery({ ...getCallCountQueryOptions(filters), enabled: isCounted(filters) });
