import { type Book, bookSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { type UploadProgress, upload } from '../../../lib/api-client';
import { getBooksQueryOptions } from './get-books';

export interface UploadBookInput {
  readonly termId: string;
  readonly classId: string;
  readonly file: File;
}

/**
 * PUT /api/books/{termId}/{classId}?filename=…: the PDF itself as the body (application/pdf), which
 * adds the book of that term and class or replaces it. 413 when larger than the server allows,
 * 415 when it is not a PDF.
 */
export function uploadBook(
  { termId, classId, file }: UploadBookInput,
  onProgress?: (progress: UploadProgress) => void,
): Promise<Book> {
  return upload(`/books/${encodeURIComponent(termId)}/${encodeURIComponent(classId)}`, {
    method: 'PUT',
    schema: bookSchema,
    query: { filename: file.name },
    body: file,
    contentType: 'application/pdf',
    onProgress,
  });
}

/** The upload as a mutation, with its progress while it runs (null otherwise). */
export function useUploadBook() {
  const queryClient = useQueryClient();
  const [progress, setProgress] = useState<UploadProgress | null>(null);
  const mutation = useMutation({
    mutationFn: (input: UploadBookInput) => {
      setProgress({ loaded: 0, total: input.file.size });
      return uploadBook(input, setProgress);
    },
    onSettled: () => {
      setProgress(null);
      void queryClient.invalidateQueries({ queryKey: getBooksQueryOptions().queryKey });
    },
  });
  return { mutation, progress };
}
