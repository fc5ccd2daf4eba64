import { type DeliveryList, deliveryListSchema } from '@school/contract';
import { infiniteQueryOptions, useInfiniteQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { type DeliveryFilters, queryKeys } from '../../../lib/query-keys';

export const PAGE_SIZE = 50;

/** GET /api/deliveries: one page, newest first, with the count of every status. */
export function getDeliveries(
  filters: DeliveryFilters,
  cursor?: string,
  signal?: AbortSignal,
): Promise<DeliveryList> {
  return request('/deliveries', {
    schema: deliveryListSchema,
    query: { ...filters, limit: PAGE_SIZE, cursor },
    signal,
  });
}

export const getDeliveriesQueryOptions = (filters: DeliveryFilters) =>
  infiniteQueryOptions({
    queryKey: queryKeys.deliveries.list(filters),
    queryFn: ({ pageParam, signal }) => getDeliveries(filters, pageParam, signal),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // The outbox moves on its own (the dispatcher): a list is worth refreshing sooner than calls.
    staleTime: 5_000,
  });

export const useDeliveries = (filters: DeliveryFilters) =>
  useInfiniteQuery(getDeliveriesQueryOptions(filters));
