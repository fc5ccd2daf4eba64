import { Link } from 'react-router';
import { bucketRange, type ChartData, formatCount, seriesAt, UNKNOWN_OPERATION } from '../utils/chart-data';
import { historyHref } from '../utils/links';
import { type ChartProps, useBarChart } from './chart-setup';
import { FiguresTable } from './figures-table';
import { UPlotChart } from './uplot-chart';

/** Distinct in colour and lightness (readable by most colour-blind readers), one per operation. */
const PALETTE = ['#1f6feb', '#1a7f37', '#9a6700', '#8250df', '#bf3989', '#0a7b83'];
const UNKNOWN_COLOUR = '#8c959f';

/** How the chart and its table name a series: the operation, or what an unknown one is. */
export const operationLabel = (name: string) => (name === UNKNOWN_OPERATION ? 'Unknown operation' : name);

/** One bar series per operation, in a colour of its own. */
const series = (data: ChartData) => ({
  stacked: data.operations.map((name, i) => ({
    label: operationLabel(name),
    color: name === UNKNOWN_OPERATION ? UNKNOWN_COLOUR : (PALETTE[i % PALETTE.length] as string),
    values: data.perOperation[i] ?? [],
  })),
});

/**
 * Calls per bucket as bars stacked by operation. A bar's part links to History with that
 * operation and the bucket's time (a click on it, or its figure in the table).
 */
export function CallsChart({ data, bucket, periodLabel }: ChartProps) {
  const chart = useBarChart({ data, bucket }, 'Calls', series);
  const hrefOf = (name: string | undefined, i: number) =>
    historyHref(bucketRange(data, i), name ? { operation: name } : {});

  const busiest = Object.entries(data.totals.byOperation)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${operationLabel(name)} ${formatCount(n)}`)
    .join(', ');
  const unknown = data.totals.byOperation[UNKNOWN_OPERATION] ?? 0;

  return (
    <UPlotChart
      title={`Calls per ${bucket} by operation`}
      summary={`${formatCount(data.totals.calls)} calls in the ${periodLabel}: ${busiest}.`}
      {...chart}
      hrefAt={(i, y) => {
        const s = seriesAt(data.perOperation, i, y);
        return hrefOf(s < 0 ? undefined : data.operations[s], i);
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
        caption={`Calls per ${bucket} by operation`}
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
