import type { QueryClient } from '@tanstack/react-query';
import { getBooksQueryOptions } from './get-books';

/** What Books asks first: the library. */
export function prefetchBooks(queryClient: QueryClient): void {
  void queryClient.prefetchQuery(getBooksQueryOptions());
}
