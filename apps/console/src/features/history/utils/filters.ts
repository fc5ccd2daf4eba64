import { CALL_FILTER_KEYS, type CallFilters, callFiltersSchema } from '@school/contract';

/**
 * The History filters live in the URL's search params (a view can be shared, a reload keeps it),
 * in the API's own names and formats, so the same string serves the list, the stream and export.
 * A value the API would refuse (a hand-edited link) is dropped rather than sent.
 */
export function filtersFromSearch(search: URLSearchParams): CallFilters {
  const filters: Record<string, unknown> = {};
  for (const key of CALL_FILTER_KEYS) {
    const value = search.get(key);
    if (value === null || value === '') continue;
    const parsed = callFiltersSchema.shape[key].safeParse(value);
    if (parsed.success) filters[key] = parsed.data;
  }
  return filters as CallFilters;
}

export function filtersToSearch(filters: CallFilters): URLSearchParams {
  const search = new URLSearchParams();
  for (const key of CALL_FILTER_KEYS) {
    const value = filters[key];
    if (value !== undefined && value !== '') search.set(key, value);
  }
  return search;
}

export const hasFilters = (filters: CallFilters): boolean => Object.keys(filters).length > 0;

const counts = new Intl.NumberFormat();
/** A count in the reader's locale: 1,234 or 1 234. */
export const formatCount = (n: number): string => counts.format(n);
