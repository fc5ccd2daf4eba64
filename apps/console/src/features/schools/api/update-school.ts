import { type School, type SchoolInput, schoolSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { useInvalidatingMutation } from '../../../lib/react-query';
import { getSchoolsQueryOptions } from '../../../lib/schools';

/** PUT /api/schools/{id}: the whole school; 404 when gone, 409 on a base URL or topic key in use. */
export function updateSchool({ id, input }: { id: number; input: SchoolInput }): Promise<School> {
  return request(`/schools/${id}`, { method: 'PUT', body: input, schema: schoolSchema });
}

export const useUpdateSchool = () =>
  useInvalidatingMutation(updateSchool, { onSuccess: [getSchoolsQueryOptions().queryKey] });
