import type { Stats } from '@school/contract';

const BUCKET_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

export const UNKNOWN_OPERATION = '(unknown)';

export interface ChartData {
  /** Bucket starts, in seconds (uPlot's time unit), every bucket of the period, empty ones included. */
  readonly x: number[];
  /** Series names, in the order of `perOperation`. */
  readonly operations: string[];
  readonly perOperation: number[][];
  readonly total: number[];
  /** Percent of calls that were not OK; null for a bucket without calls (a gap, not 0 %). */
  readonly errorRate: (number | null)[];
  readonly totals: {
    readonly calls: number;
    readonly clientErrors: number;
    readonly serverErrors: number;
    /** Percent over the whole period; null without calls. */
    readonly errorRate: number | null;
    /** The bucket with the highest error rate, when any bucket had errors. */
    readonly worst: { readonly at: number; readonly rate: number } | null;
    readonly byOperation: Readonly<Record<string, number>>;
  };
}

/**
 * Turns the API's sparse rows (one per bucket, operation and outcome that had calls) into dense
 * series for charts. Buckets are laid on the same epoch-aligned grid the server groups by; a row
 * off that grid is put in the bucket that contains it.
 */
export function toChartData(stats: Stats, knownOperations: readonly string[]): ChartData {
  const step = BUCKET_MS[stats.bucket];
  const from = Date.parse(stats.from);
  const to = Date.parse(stats.to);
  const start = Math.floor(from / step) * step;
  const count = Math.max(1, Math.ceil((to - start) / step));

  const names = [...knownOperations];
  if (stats.rows.some((r) => r.operation === null)) names.push(UNKNOWN_OPERATION);
  for (const row of stats.rows) {
    if (row.operation !== null && !names.includes(row.operation)) names.push(row.operation);
  }

  const perOperation = names.map(() => new Array<number>(count).fill(0));
  const total = new Array<number>(count).fill(0);
  const errors = new Array<number>(count).fill(0);
  const byOperation: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  let clientErrors = 0;
  let serverErrors = 0;

  for (const row of stats.rows) {
    const index = Math.floor((Date.parse(row.bucket) - start) / step);
    if (!(index >= 0 && index < count)) continue;
    const name = row.operation ?? UNKNOWN_OPERATION;
    const series = perOperation[names.indexOf(name)] as number[];
    series[index] = (series[index] ?? 0) + row.count;
    total[index] = (total[index] ?? 0) + row.count;
    byOperation[name] = (byOperation[name] ?? 0) + row.count;
    if (row.outcome !== 'ok') errors[index] = (errors[index] ?? 0) + row.count;
    if (row.outcome === 'client-error') clientErrors += row.count;
    if (row.outcome === 'server-error') serverErrors += row.count;
  }

  const x = Array.from({ length: count }, (_, i) => (start + i * step) / 1000);
  const errorRate = total.map((n, i) => (n === 0 ? null : ((errors[i] ?? 0) / n) * 100));
  const calls = total.reduce((a, b) => a + b, 0);
  let worst: ChartData['totals']['worst'] = null;
  errorRate.forEach((rate, i) => {
    if (rate !== null && rate > 0 && (!worst || rate > worst.rate)) worst = { at: (x[i] ?? 0) * 1000, rate };
  });

  return {
    x,
    operations: names,
    perOperation,
    total,
    errorRate,
    totals: {
      calls,
      clientErrors,
      serverErrors,
      errorRate: calls === 0 ? null : ((clientErrors + serverErrors) / calls) * 100,
      worst,
      byOperation,
    },
  };
}

export const formatPercent = (value: number): string =>
  `${value < 10 && value > 0 ? value.toFixed(1) : Math.round(value)}%`;
