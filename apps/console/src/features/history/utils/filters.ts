import { CALL_FILTER_KEYS, type CallFilters, callFiltersSchema } from '@school/contract';
import { urlFilters } from '../../../lib/url-filters';

// In the URL, checked with the API's schemas (lib/url-filters.ts).
const filters = urlFilters<CallFilters>(callFiltersSchema.shape, CALL_FILTER_KEYS);
export const filtersFromSearch = filters.fromSearch;
export const filtersToSearch = filters.toSearch;
export const hasFilters = filters.has;

const counts = new Intl.NumberFormat();
/** A count in the reader's locale: 1,234 or 1 234. */
export const formatCount = (n: number): string => counts.format(n);
