import { type Template, type TemplateInput, templateSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { getTemplatesQueryOptions } from './get-templates';

/**
 * PUT /api/templates/{id}: 409 when another template has that type, or when the generic `*`
 * would get another type.
 */
export function updateTemplate({ id, input }: { id: number; input: TemplateInput }): Promise<Template> {
  return request(`/templates/${id}`, { method: 'PUT', body: input, schema: templateSchema });
}

export function useUpdateTemplate() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: updateTemplate,
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: getTemplatesQueryOptions().queryKey });
    },
  });
}
