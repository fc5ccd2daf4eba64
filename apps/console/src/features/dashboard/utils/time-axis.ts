import type uPlot from 'uplot';

export type Bucket = 'hour' | 'day';

const HOUR = 3_600_000;
const DAY = 86_400_000;

const hourLabel = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
/** Day buckets are UTC days (the server groups by epoch days): named as such. */
const utcDayLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const utcDayLong = new Intl.DateTimeFormat(undefined, {
  weekday: 'short',
  month: 'short',
  day: 'numeric',
  timeZone: 'UTC',
});

/** A bucket in words, for legends and tables: "Nov 20, 14:00–15:00" or "Fri, Nov 20 (UTC)". */
export function bucketLabel(bucket: Bucket, startMs: number): string {
  if (bucket === 'day') return `${utcDayLong.format(startMs)} (UTC)`;
  return `${dayLabel.format(startMs)}, ${hourLabel.format(startMs)}–${hourLabel.format(startMs + HOUR)}`;
}

/** Ticks every so many buckets: the smallest stride whose labels fit. */
const STRIDES: Record<Bucket, number[]> = { hour: [1, 2, 3, 6, 12, 24, 48, 72, 168], day: [1, 2, 7, 14, 28] };
const LABEL_PX: Record<Bucket, number> = { hour: 56, day: 64 };

/**
 * Tick positions on a time axis whose data are bucket centres: at bucket starts, every `stride`
 * buckets, on round local hours (hour buckets) or every so many UTC days (day buckets).
 */
export function bucketTicks(bucket: Bucket, starts: readonly number[], widthPx: number): number[] {
  if (starts.length === 0) return [];
  const fits = Math.max(1, Math.floor(widthPx / LABEL_PX[bucket]));
  const stride =
    STRIDES[bucket].find((s) => Math.ceil(starts.length / s) <= fits) ?? (STRIDES[bucket].at(-1) as number);
  if (bucket === 'day' || stride === 1) return starts.filter((_, i) => i % stride === 0);
  const round = (ms: number) => {
    const date = new Date(ms);
    if (stride < 24) return date.getMinutes() === 0 && date.getHours() % stride === 0;
    const days = Math.floor((ms - date.getTimezoneOffset() * 60_000) / DAY);
    return date.getHours() === 0 && days % (stride / 24) === 0;
  };
  const ticks = starts.filter(round);
  // A zone half an hour off UTC has no round hours: every stride-th bucket, then.
  return ticks.length > 0 ? ticks : starts.filter((_, i) => i % stride === 0);
}

/**
 * The x axis and scale of a chart whose points (or bars) sit at bucket centres: ticks on bucket
 * starts (see bucketTicks), labelled with the time, and the date where the day changes (hour
 * buckets), or with the UTC date (day buckets).
 */
export function timeAxis(
  bucket: Bucket,
  starts: readonly number[],
  step: number,
): { scale: uPlot.Scale; axis: uPlot.Axis; seriesValue: uPlot.Series.Value } {
  const first = starts[0] ?? 0;
  const last = starts.at(-1) ?? first;
  return {
    scale: { time: true, range: () => [first / 1000, (last + step) / 1000] },
    axis: {
      label: bucket === 'day' ? 'Day (UTC)' : undefined,
      splits: (u) => bucketTicks(bucket, starts, u.bbox.width / devicePixelRatioOf()).map((ms) => ms / 1000),
      values: (_u, splits) =>
        splits.map((s, i) => {
          const ms = s * 1000;
          if (bucket === 'day') return utcDayLabel.format(ms);
          const previous = i > 0 ? (splits[i - 1] as number) * 1000 : undefined;
          const newDay = previous === undefined || new Date(previous).getDate() !== new Date(ms).getDate();
          return newDay ? `${hourLabel.format(ms)}\n${dayLabel.format(ms)}` : hourLabel.format(ms);
        }),
      space: LABEL_PX[bucket],
    },
    // The legend names the bucket under the pointer, not the centre's time.
    seriesValue: (_u, v) => (v === null ? '–' : bucketLabel(bucket, v * 1000 - step / 2)),
  };
}

const devicePixelRatioOf = () => (typeof window === 'undefined' ? 1 : window.devicePixelRatio || 1);
