import { type DeliveryDetail, deliveryDetailSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

/** GET /api/deliveries/{id}: one delivery with its attempts. */
export function getDelivery(id: number, signal?: AbortSignal): Promise<DeliveryDetail> {
  return request(`/deliveries/${id}`, { schema: deliveryDetailSchema, signal });
}

export const getDeliveryQueryOptions = (id: number) =>
  queryOptions({
    queryKey: queryKeys.deliveries.detail(id),
    queryFn: ({ signal }) => getDelivery(id, signal),
    // While the dispatcher still has it, follow it; once settled it no longer changes.
    refetchInterval: (query) => {
      const status = query.state.data?.status;
      return status === 'pending' || status === 'sending' ? 5_000 : false;
    },
  });

export const useDelivery = (id: number) => useQuery(getDeliveryQueryOptions(id));
