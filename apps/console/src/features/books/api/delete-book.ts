import { z } from 'zod';
import { request } from '../../../lib/api-client';
import { useInvalidatingMutation } from '../../../lib/react-query';
import { getBooksQueryOptions } from './get-books';

/** DELETE /api/books/{id}: 204, nothing in the body. Apps then get "no book" for that term and class. */
export function deleteBook(id: number): Promise<undefined> {
  return request(`/books/${id}`, { method: 'DELETE', schema: z.undefined() });
}

export const useDeleteBook = () =>
  useInvalidatingMutation(deleteBook, { onSettled: [getBooksQueryOptions().queryKey] });
