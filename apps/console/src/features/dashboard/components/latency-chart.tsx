import { useMemo } from 'react';
import type uPlot from 'uplot';
import { bucketRange, formatMs } from '../utils/chart-data';
import { centres, type LineSeries, lineChartOptions } from '../utils/chart-options';
import { historyHref } from '../utils/links';
import type { ChartProps } from './chart-setup';
import { FiguresTable } from './figures-table';
import { UPlotChart } from './uplot-chart';

/** How long calls took to answer per bucket: the median and the time 95 % of calls stayed under. */
export function LatencyChart({ data, bucket, periodLabel }: ChartProps) {
  const lines = useMemo<LineSeries[]>(
    () => [
      { label: 'Median (p50)', color: '#1f6feb', values: data.p50, format: formatMs },
      { label: '95 % of calls within', color: '#d1242f', values: data.p95, format: formatMs, dash: [6, 4] },
    ],
    [data],
  );
  const options = useMemo(
    () => lineChartOptions({ data, bucket, yLabel: 'Milliseconds', lines }),
    [data, bucket, lines],
  );
  const plotData = useMemo<uPlot.AlignedData>(() => [centres(data), data.p50, data.p95], [data]);

  let slowest: { i: number; ms: number } | undefined;
  data.p95.forEach((ms, i) => {
    if (ms !== null && (!slowest || ms > slowest.ms)) slowest = { i, ms };
  });
  const summary = slowest
    ? `How long calls took to answer, per ${bucket}: half of them within the median, 95 % within the 95th percentile. Slowest ${bucket}: 95 % within ${formatMs(slowest.ms)}. Estimated to within a few per cent.`
    : `No calls in the ${periodLabel}.`;

  return (
    <UPlotChart
      title={`Time to answer per ${bucket}`}
      summary={summary}
      options={options}
      data={plotData}
      hrefAt={(i) => (data.p50[i] !== null ? historyHref(bucketRange(data, i)) : undefined)}
    >
      <FiguresTable
        data={data}
        bucket={bucket}
        caption={`Time to answer per ${bucket}`}
        columns={[
          { label: 'Calls', values: data.total, href: (i) => historyHref(bucketRange(data, i)) },
          { label: 'Median', values: data.p50, format: formatMs },
          { label: '95 % of calls within', values: data.p95, format: formatMs },
        ]}
      />
    </UPlotChart>
  );
}
