import { DELIVERY_FILTER_KEYS, deliveryFiltersSchema } from '@school/contract';
import type { DeliveryFilters } from '../../../lib/query-keys';

/** The page's filters: the API's, except the call (a call's page lists its own deliveries). */
const KEYS = DELIVERY_FILTER_KEYS.filter((key): key is keyof DeliveryFilters => key !== 'callId');

/**
 * The Deliveries filters live in the URL (shareable, kept on reload) in the API's own names and
 * formats. A value the API would refuse (a hand-edited link) is dropped rather than sent.
 */
export function filtersFromSearch(search: URLSearchParams): DeliveryFilters {
  const filters: Record<string, unknown> = {};
  for (const key of KEYS) {
    const value = search.get(key);
    if (value === null || value === '') continue;
    const parsed = deliveryFiltersSchema.shape[key].safeParse(value);
    if (parsed.success && parsed.data !== undefined) filters[key] = parsed.data;
  }
  return filters as DeliveryFilters;
}

export function filtersToSearch(filters: DeliveryFilters): URLSearchParams {
  const search = new URLSearchParams();
  for (const key of KEYS) {
    const value = filters[key];
    if (value !== undefined && value !== '') search.set(key, value);
  }
  return search;
}

export const hasFilters = (filters: DeliveryFilters): boolean => Object.keys(filters).length > 0;

/**
 * Whether new deliveries can still come into this view: not when it ends in the past. (Those
 * listed may still change, but a closed range is for looking back.)
 */
export const isOpenEnded = (filters: DeliveryFilters, now = Date.now()): boolean =>
  filters.to === undefined || Date.parse(filters.to) > now;
