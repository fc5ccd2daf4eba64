import { type AuditQuery, auditQuerySchema } from '@school/contract';
import { urlFilters } from '../../../lib/url-filters';

/** The Audit filters, in the API's names and formats (ISO instants): what the URL holds. */
export type AuditFilters = Pick<AuditQuery, 'user' | 'action' | 'from' | 'to'>;

const KEYS = ['user', 'action', 'from', 'to'] as const;

// In the URL, as History's and Deliveries' are, checked with the API's schemas (lib/url-filters.ts).
const filters = urlFilters<AuditFilters>(auditQuerySchema.shape, KEYS);
export const filtersFromSearch = filters.fromSearch;
export const filtersToSearch = filters.toSearch;
export const hasFilters = filters.has;
