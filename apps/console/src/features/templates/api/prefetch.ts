import type { QueryClient } from '@tanstack/react-query';
import { getMissingTemplatesQueryOptions } from './get-missing-templates';
import { getTemplatesQueryOptions } from './get-templates';

/** What Templates asks first: the templates, and the notification types none of them answers. */
export function prefetchTemplates(queryClient: QueryClient): void {
  void queryClient.prefetchQuery(getTemplatesQueryOptions());
  void queryClient.prefetchQuery(getMissingTemplatesQueryOptions());
}
