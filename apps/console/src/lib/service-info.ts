import { type ServiceInfo, serviceInfoSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from './api-client';
import { queryKeys } from './query-keys';

// GET /api/service. Shared by two features (Send needs the namespace and host for its samples,
// Service lists the endpoints), so it lives in lib rather than in either.

export function getServiceInfo(signal?: AbortSignal): Promise<ServiceInfo> {
  return request('/service', { schema: serviceInfoSchema, signal });
}

export const getServiceInfoQueryOptions = () =>
  queryOptions({
    queryKey: queryKeys.service.all,
    queryFn: ({ signal }) => getServiceInfo(signal),
    // The service's addresses and namespace change only with a restart.
    staleTime: 5 * 60_000,
  });

export const useServiceInfo = () => useQuery(getServiceInfoQueryOptions());
