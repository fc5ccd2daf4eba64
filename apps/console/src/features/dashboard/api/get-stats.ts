import { type Stats, type StatsQuery, statsSchema } from '@school/contract';
import { keepPreviousData, queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

/** GET /api/stats: call counts per time bucket, operation and outcome. */
export function getStats(query: StatsQuery, signal?: AbortSignal): Promise<Stats> {
  return request('/stats', { schema: statsSchema, query: { ...query }, signal });
}

export const getStatsQueryOptions = (query: StatsQuery) =>
  queryOptions({
    queryKey: queryKeys.stats.query(query),
    queryFn: ({ signal }) => getStats(query, signal),
    // Keep the old charts on screen while another period loads.
    placeholderData: keepPreviousData,
  });

export const useStats = (query: StatsQuery) => useQuery(getStatsQueryOptions(query));
