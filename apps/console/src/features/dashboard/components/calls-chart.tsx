import { useMemo } from 'react';
import { Link, useNavigate } from 'react-router';
import { bucketRange, type ChartData, formatCount, seriesAt, UNKNOWN_OPERATION } from '../utils/chart-data';
import { type BarSeries, barChartOptions, stackedData } from '../utils/chart-options';
import { historyHref } from '../utils/links';
import type { Bucket } from '../utils/time-axis';
import { FiguresTable } from './figures-table';
import { UPlotChart } from './uplot-chart';

/** Distinct in colour and lightness (readable by most colour-blind readers), one per operation. */
const PALETTE = ['#1f6feb', '#1a7f37', '#9a6700', '#8250df', '#bf3989', '#0a7b83'];
const UNKNOWN_COLOUR = '#8c959f';

/** How the chart and its table name a series: the operation, or what an unknown one is. */
export const operationLabel = (name: string) => (name === UNKNOWN_OPERATION ? 'Unknown operation' : name);

/**
 * Calls per bucket as bars stacked by operation. A bar's part links to History with that
 * operation and the bucket's time (a click on it, or its figure in the table).
 */
export function CallsChart({
  data,
  bucket,
  periodLabel,
}: {
  data: ChartData;
  bucket: Bucket;
  periodLabel: string;
}) {
  const navigate = useNavigate();
  const stacked = useMemo<BarSeries[]>(
    () =>
      data.operations.map((name, i) => ({
        label: operationLabel(name),
        color: name === UNKNOWN_OPERATION ? UNKNOWN_COLOUR : (PALETTE[i % PALETTE.length] as string),
        values: data.perOperation[i] ?? [],
      })),
    [data],
  );
  const options = useMemo(
    () => barChartOptions({ data, bucket, yLabel: 'Calls', stacked }),
    [data, bucket, stacked],
  );
  const plotData = useMemo(() => stackedData(data, stacked), [data, stacked]);

  const hrefOf = (name: string | undefined, i: number) =>
    historyHref(bucketRange(data, i), name ? { operation: name } : {});

  const busiest = Object.entries(data.totals.byOperation)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${operationLabel(name)} ${formatCount(n)}`)
    .join(', ');
  const unknown = data.totals.byOperation[UNKNOWN_OPERATION] ?? 0;
  const unit = bucket === 'day' ? 'day' : 'hour';

  return (
    <UPlotChart
      title={`Calls per ${unit} by operation`}
      summary={`${formatCount(data.totals.calls)} calls in the ${periodLabel}: ${busiest}.`}
      options={options}
      data={plotData}
      onPick={(i, y) => {
        const s = seriesAt(data.perOperation, i, y);
        void navigate(hrefOf(s < 0 ? undefined : data.operations[s], i));
      }}
    >
      {unknown > 0 ? (
        <p className="chart-note" role="note">
          <strong>Unknown operation</strong>: {unknown === 1 ? 'a call' : `${formatCount(unknown)} calls`} to
          an address or operation name this service does not have, such as a mistyped URL or SOAPAction, an
          app built for another service, or someone probing the server. Nothing was done for{' '}
          {unknown === 1 ? 'it' : 'them'}.{' '}
          <Link to={historyHref(data, { operation: UNKNOWN_OPERATION })}>
            See {unknown === 1 ? 'it' : 'them'} in History
          </Link>
        </p>
      ) : null}
      <FiguresTable
        data={data}
        bucket={bucket}
        caption={`Calls per ${unit} by operation`}
        columns={[
          ...data.operations.map((name, s) => ({
            label: operationLabel(name),
            values: data.perOperation[s] ?? [],
            href: (i: number) => hrefOf(name, i),
          })),
          { label: 'All', values: data.total, href: (i: number) => hrefOf(undefined, i) },
        ]}
      />
    </UPlotChart>
  );
}
