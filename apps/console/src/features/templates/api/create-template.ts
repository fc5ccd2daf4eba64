import { type Template, type TemplateInput, templateSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { useInvalidatingMutation } from '../../../lib/react-query';
import { getTemplatesQueryOptions } from './get-templates';

/** POST /api/templates: 201 with the template; 409 when that type has one already. */
export function createTemplate(input: TemplateInput): Promise<Template> {
  return request('/templates', { method: 'POST', body: input, schema: templateSchema });
}

export const useCreateTemplate = () =>
  useInvalidatingMutation(createTemplate, { onSuccess: [getTemplatesQueryOptions().queryKey] });
