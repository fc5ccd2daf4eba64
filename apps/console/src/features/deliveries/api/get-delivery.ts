import { type DeliveryDetail, deliveryDetailSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

/** A delivery changed this recently is followed every half second (ms). */
const JUST_CHANGED_MS = 10_000;

/** GET /api/deliveries/{id}: one delivery with its attempts. */
export function getDelivery(id: number, signal?: AbortSignal): Promise<DeliveryDetail> {
  return request(`/deliveries/${id}`, { schema: deliveryDetailSchema, signal });
}

export const getDeliveryQueryOptions = (id: number) =>
  queryOptions({
    queryKey: queryKeys.deliveries.detail(id),
    queryFn: ({ signal }) => getDelivery(id, signal),
    // While the dispatcher still has it, follow it: closely just after it changed (a retry is sent
    // within a moment), then every 5 s; once settled it no longer changes.
    refetchInterval: (query) => {
      const data = query.state.data;
      if (!data || (data.status !== 'pending' && data.status !== 'sending')) return false;
      return Date.now() - Date.parse(data.updatedAt) < JUST_CHANGED_MS ? 500 : 5_000;
    },
  });

export const useDelivery = (id: number) => useQuery(getDeliveryQueryOptions(id));
