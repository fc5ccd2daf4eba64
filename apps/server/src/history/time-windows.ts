import { type PartitionPeriod, periodStart } from '../store/index.js';
import type { CallCursor, CallQuery } from './call-filters.js';

/** The widest window, in periods: wider ones cost the planner more than their fewer queries save. */
const MAX_SPAN = 16;

/**
 * A newest-first read of calls cut into windows of time, newest first, so that on PostgreSQL each
 * query the read makes is planned over the few partitions its window covers rather than over all
 * of them (docs/performance.md#history-on-partitions): planning a query over a hundred daily
 * partitions, and its Merge Append over all of them, cost many times its work over one.
 *
 * Each window is the query with `from` and `to` narrowed, so the filters run as they are. The
 * first holds the current period (or the cursor's) and everything after it; then windows of 1, 2,
 * 4 … periods (at most MAX_SPAN), aligned to period starts, so that each covers whole partitions
 * and the planner leaves the default partition out; the last holds everything before `oldest`
 * (the oldest partition's start: the legacy and default partitions' rows). Together they cover
 * exactly what the query asks, whatever partitions exist: the layout only decides how fast.
 *
 * `oldest` null (SQLite, or no partition made yet): the query itself, in one window.
 */
export function timeWindows(
  query: CallQuery,
  after: CallCursor | undefined,
  period: PartitionPeriod,
  oldest: number | null,
  now: number,
): CallQuery[] {
  if (oldest === null) return [query];
  const upper = Math.min(
    query.to ?? Number.POSITIVE_INFINITY,
    after ? after.at + 1 : Number.POSITIVE_INFINITY,
  );
  const lower = query.from ?? Number.NEGATIVE_INFINITY;
  const window = (lo: number, hi: number): CallQuery => ({
    ...query,
    from: lo === Number.NEGATIVE_INFINITY ? query.from : lo,
    to: hi === Number.POSITIVE_INFINITY ? query.to : hi,
  });
  if (upper <= lower) return [query];
  const out: CallQuery[] = [];
  let hi = upper;
  let lo = periodStart(Math.min(upper - 1, now), period);
  let span = 1;
  for (;;) {
    if (lo <= oldest) lo = Number.NEGATIVE_INFINITY;
    out.push(window(Math.max(lo, lower), hi));
    if (lo <= lower) return out;
    hi = lo;
    for (let i = 0; i < span; i++) lo = periodStart(lo - 1, period);
    span = Math.min(MAX_SPAN, span * 2);
  }
}
