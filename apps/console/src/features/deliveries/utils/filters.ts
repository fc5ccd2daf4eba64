import { deliveryListQuerySchema } from '@school/contract';
import type { DeliveryFilters } from '../../../lib/query-keys';

const KEYS = ['status', 'kind'] as const;

/**
 * The Deliveries filters live in the URL (shareable, kept on reload) in the API's own names. A
 * value the API would refuse (a hand-edited link) is dropped rather than sent.
 */
export function filtersFromSearch(search: URLSearchParams): DeliveryFilters {
  const filters: Record<string, unknown> = {};
  for (const key of KEYS) {
    const value = search.get(key);
    if (value === null || value === '') continue;
    const parsed = deliveryListQuerySchema.shape[key].safeParse(value);
    if (parsed.success && parsed.data !== undefined) filters[key] = parsed.data;
  }
  return filters as DeliveryFilters;
}

export function filtersToSearch(filters: DeliveryFilters): URLSearchParams {
  const search = new URLSearchParams();
  for (const key of KEYS) {
    const value = filters[key];
    if (value) search.set(key, value);
  }
  return search;
}

export const hasFilters = (filters: DeliveryFilters): boolean => Object.keys(filters).length > 0;
