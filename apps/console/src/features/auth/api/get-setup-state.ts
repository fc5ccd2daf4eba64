import { type SetupState, setupStateSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';

/** GET /api/setup (public): whether the first admin still has to be made. */
export function getSetupState(signal?: AbortSignal): Promise<SetupState> {
  return request('/setup', { schema: setupStateSchema, signal });
}

export const getSetupStateQueryOptions = () =>
  queryOptions({
    queryKey: ['setup'] as const,
    queryFn: ({ signal }) => getSetupState(signal),
    meta: { authRequest: true },
  });

export const useSetupState = () => useQuery(getSetupStateQueryOptions());
