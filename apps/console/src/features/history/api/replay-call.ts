import { type OperationResult, operationResultSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';
import { useInvalidatingMutation } from '../../../lib/react-query';

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

// Recorded whatever its outcome: the lists, the stats and the outbox move on.
export const useReplayCall = () =>
  useInvalidatingMutation(replayCall, {
    onSettled: [
      queryKeys.calls.lists(),
      [...queryKeys.calls.all, 'count'],
      queryKeys.stats.all,
      queryKeys.deliveries.all,
    ],
  });
