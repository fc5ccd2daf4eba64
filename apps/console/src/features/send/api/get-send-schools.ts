import { type SendSchoolList, sendSchoolListSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';

/**
 * GET /api/operations/schools: the schools the logged-in user may send for, by name (every school
 * for organisation-wide staff, their own for staff limited to schools).
 */
export function getSendSchools(signal?: AbortSignal): Promise<SendSchoolList> {
  return request('/operations/schools', { schema: sendSchoolListSchema, signal });
}

export const getSendSchoolsQueryOptions = () =>
  queryOptions({
    queryKey: ['send-schools'] as const,
    queryFn: ({ signal }) => getSendSchools(signal),
  });

export const useSendSchools = () => useQuery(getSendSchoolsQueryOptions());
