import { type OperationResult, operationResultSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

export interface SendOperationInput {
  readonly operation: string;
  /** Every parameter of the operation, as typed: the server validates and normalises them. */
  readonly values: Readonly<Record<string, string>>;
}

/** POST /api/operations/{name}: runs the operation as the console binding; the call is recorded. */
export function sendOperation({ operation, values }: SendOperationInput): Promise<OperationResult> {
  return request(`/operations/${encodeURIComponent(operation)}`, {
    method: 'POST',
    body: values,
    schema: operationResultSchema,
  });
}

export function useSendOperation() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: sendOperation,
    // A refused call is recorded too, so history and stats are stale either way, and a sent one
    // queued deliveries. Not awaited: the outcome shows at once, open lists refetch behind it.
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.calls.all });
      void queryClient.invalidateQueries({ queryKey: queryKeys.stats.all });
      void queryClient.invalidateQueries({ queryKey: queryKeys.deliveries.all });
    },
  });
}
