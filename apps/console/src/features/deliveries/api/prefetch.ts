import type { QueryClient } from '@tanstack/react-query';
import { filtersFromSearch } from '../utils/filters';
import { getDeliveriesQueryOptions } from './get-deliveries';
import { getDeliveryQueryOptions } from './get-delivery';

/** What Deliveries asks first, for the filters in `search`: the first page, with every status's count. */
export function prefetchDeliveries(queryClient: QueryClient, search: URLSearchParams): void {
  void queryClient.prefetchInfiniteQuery(getDeliveriesQueryOptions(filtersFromSearch(search)));
}

/** What a delivery's page asks: the delivery with its attempts. */
export function prefetchDelivery(queryClient: QueryClient, id: number): void {
  void queryClient.prefetchQuery(getDeliveryQueryOptions(id));
}
