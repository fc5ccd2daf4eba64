import { useMutation, useQueryClient } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from '../../../lib/api-client';
import { getTemplatesQueryOptions } from './get-templates';

/** DELETE /api/templates/{id}: 204; the type then gets the generic template. `*` is a 409. */
export function deleteTemplate(id: number): Promise<undefined> {
  return request(`/templates/${id}`, { method: 'DELETE', schema: z.undefined() });
}

export function useDeleteTemplate() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: deleteTemplate,
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: getTemplatesQueryOptions().queryKey });
    },
  });
}
