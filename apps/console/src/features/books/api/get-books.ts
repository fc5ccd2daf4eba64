import { type Book, bookSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from '../../../lib/api-client';

/** GET /api/books: the library, every book with its GET-binding URL. */
export function getBooks(signal?: AbortSignal): Promise<Book[]> {
  return request('/books', { schema: z.array(bookSchema), signal });
}

export const getBooksQueryOptions = () =>
  queryOptions({
    queryKey: ['books'] as const,
    queryFn: ({ signal }) => getBooks(signal),
  });

export const useBooks = () => useQuery(getBooksQueryOptions());
