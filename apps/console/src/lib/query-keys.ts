import type { CallFilters, StatsQuery } from '@school/contract';

/**
 * Query keys of the resources more than one feature touches. Features build their query-options
 * factories on these, and a mutation in one feature (a send) invalidates another's data (history,
 * stats) through them without importing that feature.
 */
export const queryKeys = {
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
};
