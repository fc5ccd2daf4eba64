import { useMemo } from 'react';
import type uPlot from 'uplot';
import type { ChartData } from '../utils/chart-data';
import {
  type BarSeries,
  barChartOptions,
  type ChartOptions,
  type LineSeries,
  stackedData,
} from '../utils/chart-options';
import type { Bucket } from '../utils/time-axis';

/** What each Dashboard chart is drawn from: the period's series, its bucket and the period in words. */
export interface ChartProps {
  data: ChartData;
  bucket: Bucket;
  /** e.g. "last 24 hours", for the summary. */
  periodLabel: string;
}

/**
 * A bar chart's uPlot options and data (bars stacked bottom first, lines over them), built only
 * when the data or the bucket change: `series` picks them out of the data, and `series` and
 * `axes` are module-level (the memos depend on them).
 */
export function useBarChart(
  { data, bucket }: Pick<ChartProps, 'data' | 'bucket'>,
  yLabel: string,
  series: (data: ChartData) => { stacked: readonly BarSeries[]; lines?: readonly LineSeries[] },
  axes?: readonly uPlot.Axis[],
): { options: ChartOptions; data: uPlot.AlignedData } {
  const { stacked, lines } = useMemo(() => series(data), [series, data]);
  const options = useMemo(
    () => barChartOptions({ data, bucket, yLabel, stacked, lines, axes }),
    [data, bucket, yLabel, stacked, lines, axes],
  );
  const plotData = useMemo(() => stackedData(data, stacked, lines), [data, stacked, lines]);
  return { options, data: plotData };
}
