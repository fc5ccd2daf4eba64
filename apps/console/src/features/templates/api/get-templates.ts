import { type Template, templateSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from '../../../lib/api-client';

/** GET /api/templates: the push templates by notification type, the generic `*` among them. */
export function getTemplates(signal?: AbortSignal): Promise<Template[]> {
  return request('/templates', { schema: z.array(templateSchema), signal });
}

export const getTemplatesQueryOptions = () =>
  queryOptions({
    queryKey: ['templates'] as const,
    queryFn: ({ signal }) => getTemplates(signal),
  });

export const useTemplates = () => useQuery(getTemplatesQueryOptions());
