import { type Template, type TemplateInput, templateSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { useInvalidatingMutation } from '../../../lib/react-query';
import { getTemplatesQueryOptions } from './get-templates';

/**
 * PUT /api/templates/{id}: 409 when another template has that type, or when the generic `*`
 * would get another type.
 */
export function updateTemplate({ id, input }: { id: number; input: TemplateInput }): Promise<Template> {
  return request(`/templates/${id}`, { method: 'PUT', body: input, schema: templateSchema });
}

export const useUpdateTemplate = () =>
  useInvalidatingMutation(updateTemplate, { onSuccess: [getTemplatesQueryOptions().queryKey] });
