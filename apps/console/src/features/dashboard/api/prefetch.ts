import { type QueryClient, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { getSchoolsQueryOptions } from '../../../lib/schools';
import { statsQueries, viewOf } from '../utils/period';
import { getStatsQueryOptions } from './get-stats';

// The Dashboard's statistics run up to "now", which is in their query keys: the page and the
// prefetch started by the click that opens it must agree on that moment, or the prefetch asks for
// a picture nobody shows. The prefetch fixes it and leaves it in the query cache (not the
// server's data, but it belongs to the session's cache and goes with it, as how the last session
// ended does in lib/session.ts); the page takes it as it mounts, then forgets it, so the next
// opening is a moment of its own.
const openedAtKey = ['dashboard', 'opened-at'] as const;
/** Longer than a page's code takes to arrive after the click: an older opening is not this one. */
const OPENING_MS = 10_000;

function openedAt(queryClient: QueryClient): number | undefined {
  const at = queryClient.getQueryData<number>(openedAtKey);
  return at !== undefined && Date.now() - at < OPENING_MS ? at : undefined;
}

/**
 * What the Dashboard asks first, for the period and bucket in `search`: the statistics of the
 * period and of the one before, and for an admin the schools (none yet: the first steps are
 * shown). The service's providers the shell has already asked for (its test-mode banner).
 */
export function prefetchDashboard(queryClient: QueryClient, search: URLSearchParams, isAdmin: boolean): void {
  const now = openedAt(queryClient) ?? Date.now();
  queryClient.setQueryData(openedAtKey, now);
  const { current, previous } = statsQueries(viewOf(search), now);
  void queryClient.prefetchQuery(getStatsQueryOptions(current));
  void queryClient.prefetchQuery(getStatsQueryOptions(previous));
  if (isAdmin) void queryClient.prefetchQuery(getSchoolsQueryOptions());
}

/**
 * The Dashboard's "now": when it was opened (the prefetch's moment, or its first render's), fixed
 * until `refresh`, so the query keys (and the picture) stay put between renders.
 */
export function useOpenedAt(): [now: number, refresh: () => void] {
  const queryClient = useQueryClient();
  const [now, setNow] = useState(() => openedAt(queryClient) ?? Date.now());
  useEffect(() => {
    queryClient.removeQueries({ queryKey: openedAtKey, exact: true });
  }, [queryClient]);
  return [now, () => setNow(Date.now())];
}
