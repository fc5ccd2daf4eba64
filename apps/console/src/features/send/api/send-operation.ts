import { ACTING_FOR_SCHOOL, type OperationResult, operationResultSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';
import { useInvalidatingMutation } from '../../../lib/react-query';

export interface SendOperationInput {
  readonly operation: string;
  /** Every parameter of the operation, as typed: the server validates and normalises them. */
  readonly values: Readonly<Record<string, string>>;
  /** The school the call is for (its id; `ACTING_FOR_SCHOOL`), when one was picked. */
  readonly schoolId?: number | undefined;
}

/**
 * POST /api/operations/{name}: runs the operation as the console binding; the call is recorded.
 * The school picked goes beside the parameters.
 */
export function sendOperation({ operation, values, schoolId }: SendOperationInput): Promise<OperationResult> {
  return request(`/operations/${encodeURIComponent(operation)}`, {
    method: 'POST',
    body: schoolId === undefined ? values : { ...values, [ACTING_FOR_SCHOOL]: schoolId },
    schema: operationResultSchema,
  });
}

// A refused call is recorded too, so history and stats are stale either way, and a sent one queued
// deliveries.
export const useSendOperation = () =>
  useInvalidatingMutation(sendOperation, {
    onSettled: [queryKeys.calls.all, queryKeys.stats.all, queryKeys.deliveries.all],
  });
