import { type MissingTemplates, missingTemplatesSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { getTemplatesQueryOptions } from './get-templates';

/**
 * GET /api/templates/missing: the notification types recent calls sent that no template answers.
 * Under the templates' key, so that adding or changing a template refreshes it.
 */
export function getMissingTemplates(signal?: AbortSignal): Promise<MissingTemplates> {
  return request('/templates/missing', { schema: missingTemplatesSchema, signal });
}

export const getMissingTemplatesQueryOptions = () =>
  queryOptions({
    queryKey: [...getTemplatesQueryOptions().queryKey, 'missing'] as const,
    queryFn: ({ signal }) => getMissingTemplates(signal),
  });

export const useMissingTemplates = () => useQuery(getMissingTemplatesQueryOptions());
