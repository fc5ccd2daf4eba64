import { type AuditQuery, auditQuerySchema } from '@school/contract';

/** The Audit filters, in the API's names and formats (ISO instants): what the URL holds. */
export type AuditFilters = Pick<AuditQuery, 'user' | 'action' | 'from' | 'to'>;

const KEYS = ['user', 'action', 'from', 'to'] as const;

/**
 * The filters live in the URL (shareable, kept on reload), as History's do. A value the API would
 * refuse (a hand-edited link) is dropped rather than sent.
 */
export function filtersFromSearch(search: URLSearchParams): AuditFilters {
  const filters: Record<string, unknown> = {};
  for (const key of KEYS) {
    const value = search.get(key);
    if (value === null || value === '') continue;
    const parsed = auditQuerySchema.shape[key].safeParse(value);
    if (parsed.success && parsed.data !== undefined) filters[key] = parsed.data;
  }
  return filters as AuditFilters;
}

export function filtersToSearch(filters: AuditFilters): URLSearchParams {
  const search = new URLSearchParams();
  for (const key of KEYS) {
    const value = filters[key];
    if (value) search.set(key, value);
  }
  return search;
}

export const hasFilters = (filters: AuditFilters): boolean => Object.keys(filters).length > 0;
