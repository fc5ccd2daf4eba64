import type { QueryClient } from '@tanstack/react-query';
import { getUsersQueryOptions } from '../../../lib/users';
import { filtersFromSearch } from '../utils/filters';
import { getAuditQueryOptions } from './get-audit';

/**
 * What Audit asks first, for the filters in `search`: the first page, and for an admin of every
 * school the staff it names (anyone else reads their own actions only, and may not list users).
 */
export function prefetchAudit(queryClient: QueryClient, search: URLSearchParams, everyone: boolean): void {
  void queryClient.prefetchInfiniteQuery(getAuditQueryOptions(filtersFromSearch(search)));
  if (everyone) void queryClient.prefetchQuery(getUsersQueryOptions());
}
