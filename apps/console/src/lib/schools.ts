import { type School, schoolSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from './api-client';

// GET /api/schools (admins). Shared by two features (Schools manages them, Send offers them in
// its school field), so it lives in lib rather than in either.

/** GET /api/schools: every registered school with its push topic. */
export function getSchools(signal?: AbortSignal): Promise<School[]> {
  return request('/schools', { schema: z.array(schoolSchema), signal });
}

export const getSchoolsQueryOptions = () =>
  queryOptions({
    queryKey: ['schools'] as const,
    queryFn: ({ signal }) => getSchools(signal),
  });

/** `enabled: false` for someone who may not list them (an operator): no request, no list. */
export const useSchools = ({ enabled = true }: { enabled?: boolean } = {}) =>
  useQuery({ ...getSchoolsQueryOptions(), enabled });
