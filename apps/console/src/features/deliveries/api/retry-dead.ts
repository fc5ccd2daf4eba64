import { z } from 'zod';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';
import { useInvalidatingMutation } from '../../../lib/react-query';

// The contract has no named schema for this answer; it is the route's own `{ retried }`.
const retryDeadResultSchema = z.object({ retried: z.number().int() });
export type RetryDeadResult = z.infer<typeof retryDeadResultSchema>;

/** POST /api/deliveries/retry-dead: every dead delivery back to pending; says how many. */
export function retryDeadDeliveries(): Promise<RetryDeadResult> {
  return request('/deliveries/retry-dead', { method: 'POST', schema: retryDeadResultSchema });
}

export const useRetryDeadDeliveries = () =>
  useInvalidatingMutation(retryDeadDeliveries, { onSettled: [queryKeys.deliveries.all] });
