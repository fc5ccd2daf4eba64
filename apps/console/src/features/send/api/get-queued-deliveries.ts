import { type Delivery, type DeliveryList, type DeliveryState, deliveryListSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

/** Where a delivery stays: the dispatcher has done with it (a dead one only moves if retried). */
export const SETTLED: readonly DeliveryState[] = ['sent', 'logged', 'dead', 'expired'];

export const isSettled = (delivery: Delivery): boolean => SETTLED.includes(delivery.status);

/** A pending delivery that has been tried: it waits for its next attempt. */
export const isRetrying = (delivery: Delivery): boolean =>
  delivery.status === 'pending' && delivery.attempts > 0;

/**
 * How soon to ask again: once a second while a delivery is waiting for its first try or being
 * sent; when every open one waits for a retry, just after the earliest retry is due (between 1 and
 * 30 seconds); never once all have settled.
 */
export function nextPoll(items: readonly Delivery[], now = Date.now()): number | false {
  const open = items.filter((d) => !isSettled(d));
  if (items.length > 0 && open.length === 0) return false;
  if (open.length === 0 || !open.every(isRetrying)) return 1_000;
  const due = Math.min(...open.map((d) => (d.nextAttemptAt ? Date.parse(d.nextAttemptAt) : now)));
  return Math.min(30_000, Math.max(1_000, due - now + 500));
}

/** GET /api/deliveries?callId={id}: what a call queued (a call queues one delivery at most today). */
export function getQueuedDeliveries(callId: number, signal?: AbortSignal): Promise<DeliveryList> {
  return request('/deliveries', { schema: deliveryListSchema, query: { callId, limit: 200 }, signal });
}

/** The deliveries a send queued, followed until they settle. */
export const getQueuedDeliveriesQueryOptions = (callId: number) =>
  queryOptions({
    // The same key as the call's deliveries in History: one cache for both views.
    queryKey: queryKeys.deliveries.ofCall(callId),
    queryFn: ({ signal }) => getQueuedDeliveries(callId, signal),
    refetchInterval: (query) => nextPoll(query.state.data?.items ?? []),
  });

export const useQueuedDeliveries = (callId: number) => useQuery(getQueuedDeliveriesQueryOptions(callId));
