import { type DeliveryList, deliveryListSchema } from '@school/contract';
import { infiniteQueryOptions, useInfiniteQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { type DeliveryFilters, queryKeys } from '../../../lib/query-keys';

export const PAGE_SIZE = 50;

/** How often a live list asks again (only while the page is shown: a hidden tab does not poll). */
export const LIVE_INTERVAL_MS = 5_000;

/** GET /api/deliveries: one page, newest first, with the count of every status. */
export function getDeliveries(
  filters: DeliveryFilters,
  cursor?: string,
  signal?: AbortSignal,
  limit = PAGE_SIZE,
): Promise<DeliveryList> {
  return request('/deliveries', {
    schema: deliveryListSchema,
    query: { ...filters, limit, cursor },
    signal,
  });
}

/**
 * The list; `live`, it is fetched again every LIVE_INTERVAL_MS (every loaded page, so rows already
 * shown change status too). Polling rather than a stream: the dispatcher of any instance changes
 * deliveries, and each instance only sees its own, while every instance reads the same database.
 */
export const getDeliveriesQueryOptions = (filters: DeliveryFilters, live = false) =>
  infiniteQueryOptions({
    queryKey: queryKeys.deliveries.list(filters),
    queryFn: ({ pageParam, signal }) => getDeliveries(filters, pageParam, signal),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // The outbox moves on its own (the dispatcher): a list is worth refreshing sooner than calls.
    staleTime: 5_000,
    refetchInterval: live ? LIVE_INTERVAL_MS : false,
  });

export const useDeliveries = (filters: DeliveryFilters, live = false) =>
  useInfiniteQuery(getDeliveriesQueryOptions(filters, live));
