import { DELIVERY_FILTER_KEYS, deliveryFiltersSchema } from '@school/contract';
import type { DeliveryFilters } from '../../../lib/query-keys';
import { urlFilters } from '../../../lib/url-filters';

/** The page's filters: the API's, except the call (a call's page lists its own deliveries). */
const KEYS = DELIVERY_FILTER_KEYS.filter((key): key is keyof DeliveryFilters => key !== 'callId');

// In the URL, checked with the API's schemas (lib/url-filters.ts).
const filters = urlFilters<DeliveryFilters>(deliveryFiltersSchema.shape, KEYS);
export const filtersFromSearch = filters.fromSearch;
export const filtersToSearch = filters.toSearch;
export const hasFilters = filters.has;

/**
 * Whether new deliveries can still come into this view: not when it ends in the past. (Those
 * listed may still change, but a closed range is for looking back.)
 */
export const isOpenEnded = (filters: DeliveryFilters, now = Date.now()): boolean =>
  filters.to === undefined || Date.parse(filters.to) > now;
