import { type DeliveryList, deliveryListSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

// A call queues one delivery at most today (an SMS or a push); a page this size is all of them.
const LIMIT = 200;

/** How often deliveries on their way are read again (ms). */
const FOLLOW_MS = 3_000;

/** GET /api/deliveries?callId={id}: the deliveries a call caused, newest first. */
export function getCallDeliveries(callId: number, signal?: AbortSignal): Promise<DeliveryList> {
  return request('/deliveries', { schema: deliveryListSchema, query: { callId, limit: LIMIT }, signal });
}

export const getCallDeliveriesQueryOptions = (callId: number) =>
  queryOptions({
    queryKey: queryKeys.deliveries.ofCall(callId),
    queryFn: ({ signal }) => getCallDeliveries(callId, signal),
    // Unlike the call, its deliveries move on (sent, retried): keep them fresh, and follow them
    // while one is on its way, so the call's verdict follows too.
    staleTime: 5_000,
    refetchInterval: (query) =>
      query.state.data?.items.some((d) => d.status === 'pending' || d.status === 'sending')
        ? FOLLOW_MS
        : false,
  });

export const useCallDeliveries = (callId: number) => useQuery(getCallDeliveriesQueryOptions(callId));
