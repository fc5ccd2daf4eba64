import { type School, type SchoolInput, schoolSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { useInvalidatingMutation } from '../../../lib/react-query';
import { getSchoolsQueryOptions } from '../../../lib/schools';

/** POST /api/schools: 201 with the school; 409 when another has that base URL or topic key. */
export function createSchool(input: SchoolInput): Promise<School> {
  return request('/schools', { method: 'POST', body: input, schema: schoolSchema });
}

export const useCreateSchool = () =>
  useInvalidatingMutation(createSchool, { onSuccess: [getSchoolsQueryOptions().queryKey] });
