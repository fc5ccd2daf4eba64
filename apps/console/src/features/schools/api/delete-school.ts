import { z } from 'zod';
import { request } from '../../../lib/api-client';
import { useInvalidatingMutation } from '../../../lib/react-query';
import { getSchoolsQueryOptions } from '../../../lib/schools';

/** DELETE /api/schools/{id}: 204. Its calls are then refused as from an unknown school. */
export function deleteSchool(id: number): Promise<undefined> {
  return request(`/schools/${id}`, { method: 'DELETE', schema: z.undefined() });
}

export const useDeleteSchool = () =>
  useInvalidatingMutation(deleteSchool, { onSettled: [getSchoolsQueryOptions().queryKey] });
