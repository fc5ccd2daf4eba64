import type { DeliveryFilters as ApiDeliveryFilters, CallFilters, StatsQuery } from '@school/contract';

/** The filters of the Deliveries page (the API's own names), without paging. */
export type DeliveryFilters = Omit<ApiDeliveryFilters, 'callId'>;

/**
 * Query keys of the resources more than one feature touches. Features build their query-options
 * factories on these, and a mutation in one feature (a send) invalidates another's data (history,
 * stats, deliveries) through them without importing that feature.
 */
export const queryKeys = {
  /** Who is logged in (lib/session.ts): null when nobody is. */
  session: {
    all: ['session'] as const,
  },
  calls: {
    all: ['calls'] as const,
    lists: () => [...queryKeys.calls.all, 'list'] as const,
    list: (filters: CallFilters) => [...queryKeys.calls.lists(), filters] as const,
    detail: (id: number) => [...queryKeys.calls.all, 'detail', id] as const,
  },
  stats: {
    all: ['stats'] as const,
    query: (query: StatsQuery) => [...queryKeys.stats.all, query] as const,
  },
  service: {
    all: ['service'] as const,
  },
  /** The outbox: listed by Deliveries, by call in History, filled by Send. */
  deliveries: {
    all: ['deliveries'] as const,
    lists: () => [...queryKeys.deliveries.all, 'list'] as const,
    list: (filters: DeliveryFilters) => [...queryKeys.deliveries.lists(), filters] as const,
    ofCall: (callId: number) => [...queryKeys.deliveries.lists(), 'call', callId] as const,
    detail: (id: number) => [...queryKeys.deliveries.all, 'detail', id] as const,
  },
};
