import type { QueryClient } from '@tanstack/react-query';
import { getSchoolsQueryOptions } from '../../../lib/schools';

/** What Schools asks first: the schools. */
export function prefetchSchools(queryClient: QueryClient): void {
  void queryClient.prefetchQuery(getSchoolsQueryOptions());
}
