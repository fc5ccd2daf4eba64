import { type Template, type TemplateInput, templateSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { getTemplatesQueryOptions } from './get-templates';

/** POST /api/templates: 201 with the template; 409 when that type has one already. */
export function createTemplate(input: TemplateInput): Promise<Template> {
  return request('/templates', { method: 'POST', body: input, schema: templateSchema });
}

export function useCreateTemplate() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: createTemplate,
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: getTemplatesQueryOptions().queryKey });
    },
  });
}
