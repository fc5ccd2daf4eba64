import { type OperationResult, operationResultSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

export interface ReplayInput {
  readonly operation: string;
  readonly values: Readonly<Record<string, string>>;
}

/**
 * POST /api/operations/{name}: the console's own door (as Send), so a replay is a new call of the
 * `console` binding, recorded and audited like any other.
 */
export function replayCall({ operation, values }: ReplayInput): Promise<OperationResult> {
  return request(`/operations/${encodeURIComponent(operation)}`, {
    method: 'POST',
    body: values,
    schema: operationResultSchema,
  });
}

export function useReplayCall() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: replayCall,
    // Recorded whatever its outcome: the lists, the stats and the outbox move on.
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.calls.lists() });
      void queryClient.invalidateQueries({ queryKey: [...queryKeys.calls.all, 'count'] });
      void queryClient.invalidateQueries({ queryKey: queryKeys.stats.all });
      void queryClient.invalidateQueries({ queryKey: queryKeys.deliveries.all });
    },
  });
}
