import { type Stats, UNKNOWN_OPERATION } from '@school/contract';

const BUCKET_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** The series of calls whose operation was not recognised: also their History filter's value. */
export { UNKNOWN_OPERATION };

/** What the deliveries chart stacks, bottom up, and what each is called. */
export const DELIVERY_SERIES = [
  { key: 'sent', label: 'Sent' },
  { key: 'logged', label: 'Logged, not sent' },
  { key: 'waiting', label: 'Waiting' },
  { key: 'expired', label: 'Expired' },
  { key: 'dead', label: 'Dead' },
] as const;
export type DeliverySeries = (typeof DELIVERY_SERIES)[number]['key'];

type DeliveryCounts = Record<DeliverySeries | 'failedAttempts', number>;

export interface ChartData {
  /** Bucket starts, in seconds (uPlot's time unit), every bucket of the period, empty ones included. */
  readonly x: number[];
  /** The bucket length in milliseconds. */
  readonly step: number;
  /** The period, epoch milliseconds (`to` exclusive): the first and last buckets are cut to it. */
  readonly from: number;
  readonly to: number;
  /** Series names, in the order of `perOperation`; UNKNOWN_OPERATION for calls of no known operation. */
  readonly operations: string[];
  readonly perOperation: number[][];
  readonly total: number[];
  readonly clientErrors: number[];
  readonly serverErrors: number[];
  /** Percent of calls that were not OK; null for a bucket without calls (a gap, not 0 %). */
  readonly errorRate: (number | null)[];
  /** Milliseconds; null for a bucket without calls. */
  readonly p50: (number | null)[];
  readonly p95: (number | null)[];
  readonly deliveries: Readonly<Record<DeliverySeries | 'failedAttempts', number[]>>;
  readonly totals: {
    readonly calls: number;
    readonly clientErrors: number;
    readonly serverErrors: number;
    /** Percent over the whole period; null without calls. */
    readonly errorRate: number | null;
    /** The bucket with the highest error rate, when any bucket had errors. */
    readonly worst: { readonly at: number; readonly rate: number } | null;
    readonly byOperation: Readonly<Record<string, number>>;
    readonly deliveries: Readonly<DeliveryCounts>;
  };
}

/** The time range of bucket `i`, cut to the period, in epoch milliseconds (`to` exclusive). */
export function bucketRange(data: ChartData, i: number): { from: number; to: number } {
  const start = (data.x[i] ?? 0) * 1000;
  return { from: Math.max(start, data.from), to: Math.min(start + data.step, data.to) };
}

/**
 * Turns the API's sparse rows (one per bucket that had something) into dense series for charts.
 * Buckets are laid on the same epoch-aligned grid the server groups by; a row off that grid is put
 * in the bucket that contains it.
 */
export function toChartData(stats: Stats, knownOperations: readonly string[]): ChartData {
  const step = BUCKET_MS[stats.bucket];
  const from = Date.parse(stats.from);
  const to = Date.parse(stats.to);
  const start = Math.floor(from / step) * step;
  const count = Math.max(1, Math.ceil((to - start) / step));
  const zeros = () => new Array<number>(count).fill(0);
  const indexOf = (bucket: string) => {
    const index = Math.floor((Date.parse(bucket) - start) / step);
    return index >= 0 && index < count ? index : -1;
  };

  const names = [...knownOperations];
  for (const row of stats.rows) {
    if (row.operation !== null && !names.includes(row.operation)) names.push(row.operation);
  }
  if (stats.rows.some((r) => r.operation === null)) names.push(UNKNOWN_OPERATION);

  const perOperation = names.map(zeros);
  const total = zeros();
  const clientErrors = zeros();
  const serverErrors = zeros();
  const byOperation: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));

  for (const row of stats.rows) {
    const index = indexOf(row.bucket);
    if (index < 0) continue;
    const name = row.operation ?? UNKNOWN_OPERATION;
    const series = perOperation[names.indexOf(name)] as number[];
    series[index] = (series[index] ?? 0) + row.count;
    total[index] = (total[index] ?? 0) + row.count;
    byOperation[name] = (byOperation[name] ?? 0) + row.count;
    if (row.outcome === 'client-error') clientErrors[index] = (clientErrors[index] ?? 0) + row.count;
    if (row.outcome === 'server-error') serverErrors[index] = (serverErrors[index] ?? 0) + row.count;
  }

  const p50 = new Array<number | null>(count).fill(null);
  const p95 = new Array<number | null>(count).fill(null);
  for (const row of stats.latency) {
    const index = indexOf(row.bucket);
    if (index < 0) continue;
    p50[index] = row.p50Ms;
    p95[index] = row.p95Ms;
  }

  const deliveries = {
    sent: zeros(),
    logged: zeros(),
    waiting: zeros(),
    expired: zeros(),
    dead: zeros(),
    failedAttempts: zeros(),
  };
  const deliveryTotals: DeliveryCounts = {
    sent: 0,
    logged: 0,
    waiting: 0,
    expired: 0,
    dead: 0,
    failedAttempts: 0,
  };
  for (const row of stats.deliveries) {
    const index = indexOf(row.bucket);
    if (index < 0) continue;
    for (const key of Object.keys(deliveries) as (keyof typeof deliveries)[]) {
      deliveries[key][index] = (deliveries[key][index] ?? 0) + row[key];
      deliveryTotals[key] += row[key];
    }
  }

  const x = Array.from({ length: count }, (_, i) => (start + i * step) / 1000);
  const errorRate = total.map((n, i) =>
    n === 0 ? null : (((clientErrors[i] ?? 0) + (serverErrors[i] ?? 0)) / n) * 100,
  );
  const calls = total.reduce((a, b) => a + b, 0);
  const clientSum = clientErrors.reduce((a, b) => a + b, 0);
  const serverSum = serverErrors.reduce((a, b) => a + b, 0);
  let worst: ChartData['totals']['worst'] = null;
  errorRate.forEach((rate, i) => {
    if (rate !== null && rate > 0 && (!worst || rate > worst.rate)) worst = { at: (x[i] ?? 0) * 1000, rate };
  });

  return {
    x,
    step,
    from,
    to,
    operations: names,
    perOperation,
    total,
    clientErrors,
    serverErrors,
    errorRate,
    p50,
    p95,
    deliveries,
    totals: {
      calls,
      clientErrors: clientSum,
      serverErrors: serverSum,
      errorRate: calls === 0 ? null : ((clientSum + serverSum) / calls) * 100,
      worst,
      byOperation,
      deliveries: deliveryTotals,
    },
  };
}

/**
 * Series drawn as stacked bars: each series' top, bottom (first) series first. uPlot fills each
 * bar from zero, so the stack is drawn from its top series down, each covering the rest of the one
 * before; `find` tells which series a value at a bucket falls in.
 */
export function stack(series: readonly (readonly number[])[]): number[][] {
  const tops: number[][] = [];
  series.forEach((values, s) => {
    const below = tops[s - 1];
    tops.push(values.map((v, i) => v + (below?.[i] ?? 0)));
  });
  return tops;
}

/** Which stacked series (index into `series`) a value `y` at bucket `i` falls in; -1 above the stack. */
export function seriesAt(series: readonly (readonly number[])[], i: number, y: number): number {
  let top = 0;
  for (let s = 0; s < series.length; s++) {
    const value = series[s]?.[i] ?? 0;
    top += value;
    if (value > 0 && y <= top) return s;
  }
  return -1;
}

export const formatPercent = (value: number): string =>
  `${value < 10 && value > 0 ? value.toFixed(1) : Math.round(value)}%`;

/** A duration for the charts: 1 decimal below 10 ms, whole milliseconds below 10 s, then seconds. */
export function formatMs(ms: number): string {
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 10_000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

const counts = new Intl.NumberFormat();
/** A count in the reader's locale: 1,234 or 1 234. */
export const formatCount = (n: number): string => counts.format(n);
