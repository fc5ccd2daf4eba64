import { type CallDetail, callDetailSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';

/** GET /api/calls/{id}: one call with its raw request and response. */
export function getCall(id: number, signal?: AbortSignal): Promise<CallDetail> {
  return request(`/calls/${id}`, { schema: callDetailSchema, signal });
}

export const getCallQueryOptions = (id: number) =>
  queryOptions({
    queryKey: queryKeys.calls.detail(id),
    queryFn: ({ signal }) => getCall(id, signal),
    // A recorded call never changes.
    staleTime: Number.POSITIVE_INFINITY,
  });

export const useCall = (id: number) => useQuery(getCallQueryOptions(id));
