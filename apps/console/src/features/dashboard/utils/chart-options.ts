import uPlot from 'uplot';
import { type ChartData, stack } from './chart-data';
import { type Bucket, timeAxis } from './time-axis';

export type ChartOptions = Omit<uPlot.Options, 'width' | 'height'>;

export interface BarSeries {
  readonly label: string;
  readonly color: string;
  readonly values: readonly number[];
}

export interface LineSeries {
  readonly label: string;
  readonly color: string;
  readonly values: readonly (number | null)[];
  /** The scale it is drawn on: `y` (the bars') unless given. */
  readonly scale?: string;
  readonly format?: (value: number) => string;
  readonly dash?: number[];
}

/** Tick steps for counts: whole numbers only (no "2.5 calls"). */
export const COUNT_INCRS: number[] = (() => {
  const steps: number[] = [];
  for (let scale = 1; scale <= 1e9; scale *= 10) steps.push(scale, 2 * scale, 5 * scale);
  return steps;
})();

/**
 * A y scale from 0 with room above the highest value, so the top bar's label and a line's
 * highest point are drawn inside the chart, not on its edge.
 */
export const fromZero = (_u: uPlot, _min: number, max: number): uPlot.Range.MinMax => [
  0,
  max > 0 ? max * 1.1 : 1,
];

/** Bucket centres, in seconds: where bars and points sit, between the ticks on bucket starts. */
export const centres = (data: ChartData): number[] => data.x.map((s) => s + data.step / 2000);

const bars = uPlot.paths.bars?.({ size: [0.85, 80], align: 0 });

/**
 * A chart of counts per bucket as stacked bars (`stacked`, bottom first), with lines over them,
 * and an axis for each scale the lines use besides `y`. Its data: see `stackedData`.
 */
export function barChartOptions({
  data,
  bucket,
  yLabel,
  stacked,
  lines = [],
  axes = [],
}: {
  data: ChartData;
  bucket: Bucket;
  yLabel: string;
  stacked: readonly BarSeries[];
  lines?: readonly LineSeries[];
  axes?: readonly uPlot.Axis[];
}): ChartOptions {
  const starts = data.x.map((s) => s * 1000);
  const time = timeAxis(bucket, starts, data.step);
  // The stack is drawn top series first (see `stack`); the legend lists it top down too, each with
  // its own count rather than the height it is drawn at.
  const topDown = [...stacked].reverse();
  const scales: uPlot.Scales = {
    x: time.scale,
    y: { range: fromZero },
  };
  for (const line of lines) if (line.scale && line.scale !== 'y') scales[line.scale] ??= {};
  return {
    scales,
    axes: [time.axis, { label: yLabel, incrs: COUNT_INCRS }, ...axes],
    cursor: { points: { show: lines.length > 0 } },
    legend: { live: true },
    series: [
      { value: time.seriesValue },
      ...topDown.map(
        (s): uPlot.Series => ({
          label: s.label,
          fill: s.color,
          stroke: s.color,
          width: 0,
          ...(bars ? { paths: bars } : {}),
          points: { show: false },
          value: (_u, _v, _seriesIdx, idx) =>
            idx === null || idx === undefined ? '–' : String(s.values[idx] ?? 0),
        }),
      ),
      ...lines.map(
        (l): uPlot.Series => ({
          label: l.label,
          stroke: l.color,
          width: 2,
          scale: l.scale ?? 'y',
          ...(l.dash ? { dash: l.dash } : {}),
          points: { show: data.x.length <= 48, size: 5 },
          value: (_u, v) => (v === null || v === undefined ? '–' : (l.format ?? String)(v)),
        }),
      ),
    ],
  };
}

/** The data for barChartOptions: centres, the stack's tops (top series first), then the lines. */
export function stackedData(
  data: ChartData,
  stacked: readonly BarSeries[],
  lines: readonly LineSeries[] = [],
): uPlot.AlignedData {
  const tops = stack(stacked.map((s) => s.values)).reverse();
  return [centres(data), ...tops, ...lines.map((l) => [...l.values])];
}

/** A chart of lines only (latency). */
export function lineChartOptions({
  data,
  bucket,
  yLabel,
  lines,
}: {
  data: ChartData;
  bucket: Bucket;
  yLabel: string;
  lines: readonly LineSeries[];
}): ChartOptions {
  const starts = data.x.map((s) => s * 1000);
  const time = timeAxis(bucket, starts, data.step);
  return {
    scales: { x: time.scale, y: { range: fromZero } },
    axes: [time.axis, { label: yLabel }],
    series: [
      { value: time.seriesValue },
      ...lines.map(
        (l): uPlot.Series => ({
          label: l.label,
          stroke: l.color,
          width: 2,
          ...(l.dash ? { dash: l.dash } : {}),
          spanGaps: false,
          points: { show: data.x.length <= 48, size: 5 },
          value: (_u, v) => (v === null || v === undefined ? '–' : (l.format ?? String)(v)),
        }),
      ),
    ],
  };
}
