import { z } from 'zod';
import { request } from '../../../lib/api-client';
import { useInvalidatingMutation } from '../../../lib/react-query';
import { getTemplatesQueryOptions } from './get-templates';

/** DELETE /api/templates/{id}: 204; the type then gets the generic template. `*` is a 409. */
export function deleteTemplate(id: number): Promise<undefined> {
  return request(`/templates/${id}`, { method: 'DELETE', schema: z.undefined() });
}

export const useDeleteTemplate = () =>
  useInvalidatingMutation(deleteTemplate, { onSettled: [getTemplatesQueryOptions().queryKey] });
