import type { QueryClient } from '@tanstack/react-query';
import { getUsersQueryOptions } from '../../../lib/users';

/** What Users asks first: the staff accounts (who is logged in, the shell already knows). */
export function prefetchUsers(queryClient: QueryClient): void {
  void queryClient.prefetchQuery(getUsersQueryOptions());
}
