import { type OperationResult, operationResultSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';
import { useInvalidatingMutation } from '../../../lib/react-query';

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

// A refused call is recorded too, so history and stats are stale either way, and a sent one queued
// deliveries.
export const useSendOperation = () =>
  useInvalidatingMutation(sendOperation, {
    onSettled: [queryKeys.calls.all, queryKeys.stats.all, queryKeys.deliveries.all],
  });
