import type { QueryClient } from '@tanstack/react-query';
import { getUsersQueryOptions } from '../../../lib/users';
import { filtersFromSearch } from '../utils/filters';
import { getAuditQueryOptions } from './get-audit';

/** What Audit asks first, for the filters in `search`: the first page, and the staff it names. */
export function prefetchAudit(queryClient: QueryClient, search: URLSearchParams): void {
  void queryClient.prefetchInfiniteQuery(getAuditQueryOptions(filtersFromSearch(search)));
  void queryClient.prefetchQuery(getUsersQueryOptions());
}
