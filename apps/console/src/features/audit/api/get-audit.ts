import { type AuditList, auditListSchema } from '@school/contract';
import { infiniteQueryOptions, useInfiniteQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import type { AuditFilters } from '../utils/filters';

export const PAGE_SIZE = 50;

/** GET /api/audit (admins): one page of the audit log, newest first, with the next page's cursor. */
export function getAudit(filters: AuditFilters, cursor?: string, signal?: AbortSignal): Promise<AuditList> {
  return request('/audit', {
    schema: auditListSchema,
    query: { ...filters, limit: PAGE_SIZE, cursor },
    signal,
  });
}

export const getAuditQueryOptions = (filters: AuditFilters) =>
  infiniteQueryOptions({
    queryKey: ['audit', 'list', filters] as const,
    queryFn: ({ pageParam, signal }) => getAudit(filters, pageParam, signal),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // Every change anywhere in the console lands here: fetched again whenever the page is opened,
    // fresh only for the moment between the click that opens it, which asks (app/pages.ts), and
    // the page showing the answer.
    staleTime: 2_000,
  });

export const useAudit = (filters: AuditFilters) => useInfiniteQuery(getAuditQueryOptions(filters));
