import { useMutation, useQueryClient } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from '../../../lib/api-client';
import { getBooksQueryOptions } from './get-books';

/** DELETE /api/books/{id}: 204, nothing in the body. Apps then get "no book" for that term and class. */
export function deleteBook(id: number): Promise<undefined> {
  return request(`/books/${id}`, { method: 'DELETE', schema: z.undefined() });
}

export function useDeleteBook() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: deleteBook,
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: getBooksQueryOptions().queryKey });
    },
  });
}
