import type { StatsQuery } from '@school/contract';
import type { Bucket } from './time-axis';

export const PERIODS = {
  '24h': { label: 'Last 24 hours', ms: 24 * 3_600_000 },
  '7d': { label: 'Last 7 days', ms: 7 * 86_400_000 },
  '30d': { label: 'Last 30 days', ms: 30 * 86_400_000 },
} as const;
export type Period = keyof typeof PERIODS;
export const BUCKETS: Record<Bucket, string> = { hour: 'Hour', day: 'Day' };

const isPeriod = (v: string | null): v is Period => v !== null && v in PERIODS;
const isBucket = (v: string | null): v is Bucket => v !== null && v in BUCKETS;

/** The period and bucket in the Dashboard's URL (`?period=7d&bucket=day`); the last day by hour. */
export function viewOf(search: URLSearchParams): { period: Period; bucket: Bucket } {
  const period = search.get('period');
  const bucket = search.get('bucket');
  return { period: isPeriod(period) ? period : '24h', bucket: isBucket(bucket) ? bucket : 'hour' };
}

/**
 * What the Dashboard asks /api/stats for, up to `now`: the period in the chosen buckets, and the
 * period before, as long, in days (what "errors are up" is measured against).
 */
export function statsQueries(
  { period, bucket }: { period: Period; bucket: Bucket },
  now: number,
): { current: StatsQuery; previous: StatsQuery } {
  const ms = PERIODS[period].ms;
  return {
    current: { from: new Date(now - ms).toISOString(), to: new Date(now).toISOString(), bucket },
    previous: {
      from: new Date(now - 2 * ms).toISOString(),
      to: new Date(now - ms).toISOString(),
      bucket: 'day',
    },
  };
}
