import type { DeliveryState } from '@school/contract';
import {
  bucketRange,
  type ChartData,
  DELIVERY_SERIES,
  type DeliverySeries,
  formatCount,
  seriesAt,
} from '../utils/chart-data';
import { deliveriesHref } from '../utils/links';
import { type ChartProps, useBarChart } from './chart-setup';
import { FiguresTable } from './figures-table';
import { UPlotChart } from './uplot-chart';

const COLOURS: Record<DeliverySeries, string> = {
  sent: '#1a7f37',
  logged: '#8c959f',
  waiting: '#1f6feb',
  expired: '#9a6700',
  dead: '#d1242f',
};
/** The Deliveries list's status for each series ("waiting" is pending or being sent: pending lists most). */
const STATUS: Record<DeliverySeries, DeliveryState> = {
  sent: 'sent',
  logged: 'logged',
  waiting: 'pending',
  expired: 'expired',
  dead: 'dead',
};

/** A bar series per outcome, bottom up as DELIVERY_SERIES lists them; failed attempts as a line. */
const series = (data: ChartData) => ({
  stacked: DELIVERY_SERIES.map((s) => ({
    label: s.label,
    color: COLOURS[s.key],
    values: data.deliveries[s.key],
  })),
  lines: [
    { label: 'Failed attempts', color: '#8250df', values: data.deliveries.failedAttempts, dash: [6, 4] },
  ],
});

/**
 * The SMS and pushes queued per bucket, stacked by what became of them, with their failed
 * attempts (each retry that failed) as a line. A bar's part links to Deliveries with that status
 * and the bucket's time.
 */
export function DeliveriesChart({ data, bucket, periodLabel }: ChartProps) {
  const chart = useBarChart({ data, bucket }, 'Deliveries', series);
  const totals = data.totals.deliveries;
  const queued = DELIVERY_SERIES.reduce((n, s) => n + totals[s.key], 0);
  const parts = DELIVERY_SERIES.filter((s) => totals[s.key] > 0)
    .map((s) => `${formatCount(totals[s.key])} ${s.label.toLowerCase()}`)
    .join(', ');
  const summary =
    queued === 0
      ? `No SMS or push was queued in the ${periodLabel}.`
      : `${formatCount(queued)} SMS and pushes queued in the ${periodLabel}: ${parts}; ${formatCount(totals.failedAttempts)} failed ${totals.failedAttempts === 1 ? 'attempt' : 'attempts'} along the way.`;
  const hrefOf = (s: DeliverySeries, i: number) =>
    deliveriesHref(bucketRange(data, i), { status: STATUS[s] });

  return (
    <UPlotChart
      title={`Deliveries queued per ${bucket}`}
      summary={summary}
      {...chart}
      hrefAt={(i, y) => {
        const s = seriesAt(
          DELIVERY_SERIES.map((d) => data.deliveries[d.key]),
          i,
          y,
        );
        const picked = DELIVERY_SERIES[s];
        return picked ? hrefOf(picked.key, i) : undefined;
      }}
    >
      <FiguresTable
        data={data}
        bucket={bucket}
        caption={`Deliveries queued per ${bucket}`}
        columns={[
          ...DELIVERY_SERIES.map((s) => ({
            label: s.label,
            values: data.deliveries[s.key],
            href: (i: number) => hrefOf(s.key, i),
          })),
          { label: 'Failed attempts', values: data.deliveries.failedAttempts },
        ]}
      />
    </UPlotChart>
  );
}
