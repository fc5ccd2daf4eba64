import { useMutation, useQueryClient } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from '../../../lib/api-client';
import { getSchoolsQueryOptions } from '../../../lib/schools';

/** DELETE /api/schools/{id}: 204. Its calls are then refused as from an unknown school. */
export function deleteSchool(id: number): Promise<undefined> {
  return request(`/schools/${id}`, { method: 'DELETE', schema: z.undefined() });
}

export function useDeleteSchool() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: deleteSchool,
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: getSchoolsQueryOptions().queryKey });
    },
  });
}
