import type { CallFilters, DeliveryFilters } from '@school/contract';
import { paths } from '../../../config/paths';

type Range = { readonly from: number; readonly to: number };

const search = (values: Record<string, string | undefined>): string => {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value) params.set(key, value);
  const text = params.toString();
  return text ? `?${text}` : '';
};

const iso = (ms: number) => new Date(ms).toISOString();

/** History showing the calls of a time range, with the given filters (the API's own names). */
export const historyHref = (range: Range, filters: Omit<CallFilters, 'from' | 'to'> = {}): string =>
  paths.history.href(search({ ...filters, from: iso(range.from), to: iso(range.to) }));

/** Deliveries showing those queued in a time range, with the given filters. */
export const deliveriesHref = (
  range: Range,
  filters: Omit<DeliveryFilters, 'from' | 'to' | 'callId'> = {},
): string => paths.deliveries.href(search({ ...filters, from: iso(range.from), to: iso(range.to) }));
