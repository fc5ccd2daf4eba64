import { type DeliveryDetail, deliveryDetailSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';
import { getDeliveryQueryOptions } from './get-delivery';

/**
 * POST /api/deliveries/{id}/retry: a dead delivery back to pending with a fresh set of attempts.
 * Any other status is a 409 problem (an expired auth code is never sent late).
 */
export function retryDelivery(id: number): Promise<DeliveryDetail> {
  return request(`/deliveries/${id}/retry`, { method: 'POST', schema: deliveryDetailSchema });
}

export function useRetryDelivery() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: retryDelivery,
    onSuccess: (delivery) => {
      queryClient.setQueryData(getDeliveryQueryOptions(delivery.id).queryKey, delivery);
    },
    onError: (_error, id) => {
      // A 409 means what is shown is out of date: fetch the delivery as it is now.
      void queryClient.invalidateQueries({ queryKey: getDeliveryQueryOptions(id).queryKey });
    },
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.deliveries.lists() });
    },
  });
}
