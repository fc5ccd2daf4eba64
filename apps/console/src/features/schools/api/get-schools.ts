import { type School, schoolSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from '../../../lib/api-client';

/** GET /api/schools: every registered school with its push topic. */
export function getSchools(signal?: AbortSignal): Promise<School[]> {
  return request('/schools', { schema: z.array(schoolSchema), signal });
}

export const getSchoolsQueryOptions = () =>
  queryOptions({
    queryKey: ['schools'] as const,
    queryFn: ({ signal }) => getSchools(signal),
  });

export const useSchools = () => useQuery(getSchoolsQueryOptions());
