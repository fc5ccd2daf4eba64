import type { DeliveryList } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { queryKeys } from '../../../lib/query-keys';
import { getDeliveries } from './get-deliveries';

export type DeliveryCounts = DeliveryList['counts'];

/** How often the counts are read while a "Retry all dead" is followed (ms). */
const FOLLOW_MS = 1_000;

/** Every status's count now (GET /api/deliveries, one row: the counts are of all deliveries whatever the filters). */
export const fetchDeliveryCounts = async (signal?: AbortSignal): Promise<DeliveryCounts> =>
  (await getDeliveries({}, undefined, signal, 1)).counts;

/**
 * The counts as read after the retry made at `since` (ms): a key of their own, outside the lists',
 * so that following a retry reads no pages and never starts from counts read before it.
 */
export const getDeliveryCountsQueryOptions = (since: number) =>
  queryOptions({
    queryKey: [...queryKeys.deliveries.all, 'counts', since] as const,
    queryFn: ({ signal }) => fetchDeliveryCounts(signal),
    staleTime: 0,
  });

/** The counts since the retry made at `since`, read every second while `follow` says so. */
export const useDeliveryCounts = (
  since: number,
  follow: (counts: DeliveryCounts | undefined) => boolean,
  enabled: boolean,
) =>
  useQuery({
    ...getDeliveryCountsQueryOptions(since),
    enabled,
    refetchInterval: (query) => (follow(query.state.data) ? FOLLOW_MS : false),
  });
