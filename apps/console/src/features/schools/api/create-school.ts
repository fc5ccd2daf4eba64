import { type School, type SchoolInput, schoolSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { getSchoolsQueryOptions } from '../../../lib/schools';

/** POST /api/schools: 201 with the school; 409 when another has that base URL or topic key. */
export function createSchool(input: SchoolInput): Promise<School> {
  return request('/schools', { method: 'POST', body: input, schema: schoolSchema });
}

export function useCreateSchool() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: createSchool,
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: getSchoolsQueryOptions().queryKey });
    },
  });
}
