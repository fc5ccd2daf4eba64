import { operations } from '@school/contract';
import { useMemo, useState } from 'react';
import { useSearchParams } from 'react-router';
import type uPlot from 'uplot';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { formatDateTime } from '../../../lib/format';
import { useStats } from '../api/get-stats';
import { type ChartData, formatPercent, toChartData } from '../utils/chart-data';
import { UPlotChart } from './uplot-chart';
import '../dashboard.css';

const PERIODS = {
  '24h': { label: 'Last 24 hours', ms: 24 * 3_600_000 },
  '7d': { label: 'Last 7 days', ms: 7 * 86_400_000 },
  '30d': { label: 'Last 30 days', ms: 30 * 86_400_000 },
} as const;
type Period = keyof typeof PERIODS;
const BUCKETS = { hour: 'Hour', day: 'Day' } as const;
type Bucket = keyof typeof BUCKETS;

/** Distinct in colour and lightness (readable by most colour-blind readers), one per operation. */
const PALETTE = ['#1f6feb', '#d1242f', '#1a7f37', '#9a6700', '#8250df', '#57606a', '#bf3989'];

const isPeriod = (v: string | null): v is Period => v !== null && v in PERIODS;
const isBucket = (v: string | null): v is Bucket => v !== null && v in BUCKETS;

export function DashboardPage() {
  const [search, setSearch] = useSearchParams();
  const period: Period = isPeriod(search.get('period')) ? (search.get('period') as Period) : '24h';
  const bucket: Bucket = isBucket(search.get('bucket')) ? (search.get('bucket') as Bucket) : 'hour';
  // "Now" is fixed until Refresh, so the query key (and the picture) stays put between renders.
  const [now, setNow] = useState(() => Date.now());
  const range = useMemo(
    () => ({
      from: new Date(now - PERIODS[period].ms).toISOString(),
      to: new Date(now).toISOString(),
      bucket,
    }),
    [now, period, bucket],
  );
  const stats = useStats(range);
  const data = useMemo(
    () =>
      stats.data
        ? toChartData(
            stats.data,
            operations.map((op) => op.name),
          )
        : undefined,
    [stats.data],
  );

  const set = (key: string, value: string) => {
    const next = new URLSearchParams(search);
    next.set(key, value);
    setSearch(next, { replace: true });
  };

  return (
    <div className="page dashboard-page">
      <title>Dashboard · School Messaging</title>
      <h1>Dashboard</h1>
      <div className="toolbar">
        <label className="inline-field">
          Period{' '}
          <select value={period} onChange={(e) => set('period', e.target.value)}>
            {Object.entries(PERIODS).map(([key, p]) => (
              <option key={key} value={key}>
                {p.label}
              </option>
            ))}
          </select>
        </label>
        <label className="inline-field">
          Bucket{' '}
          <select value={bucket} onChange={(e) => set('bucket', e.target.value)}>
            {Object.entries(BUCKETS).map(([key, label]) => (
              <option key={key} value={key}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" className="button" onClick={() => setNow(Date.now())}>
          Refresh
        </button>
        {stats.isFetching && data ? (
          <span className="muted" role="status">
            Updating…
          </span>
        ) : null}
      </div>
      {stats.isPending ? (
        <Loading>Loading statistics…</Loading>
      ) : !data ? (
        <ErrorState error={stats.error} title="Could not load statistics" onRetry={() => stats.refetch()} />
      ) : data.totals.calls === 0 ? (
        <EmptyState>No calls in this period.</EmptyState>
      ) : (
        <Charts data={data} bucket={bucket} periodLabel={PERIODS[period].label.toLowerCase()} />
      )}
    </div>
  );
}

function Charts({ data, bucket, periodLabel }: { data: ChartData; bucket: Bucket; periodLabel: string }) {
  const unit = bucket === 'hour' ? 'hour' : 'day';
  const { totals } = data;
  // Rebuild a chart only when its series change, not on every new set of numbers.
  const names = data.operations.join('\n');
  const manyPoints = data.x.length > 48;

  const callsOptions = useMemo<Omit<uPlot.Options, 'width' | 'height'>>(
    () => ({
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { label: 'Calls' }],
      series: [
        {},
        ...names.split('\n').map((name, i) => ({
          label: name,
          stroke: PALETTE[i % PALETTE.length],
          width: 2,
          points: { show: !manyPoints },
        })),
      ],
    }),
    [names, manyPoints],
  );
  const callsData = useMemo<uPlot.AlignedData>(() => [data.x, ...data.perOperation], [data]);

  const errorOptions = useMemo<Omit<uPlot.Options, 'width' | 'height'>>(
    () => ({
      scales: { x: { time: true }, y: { range: [0, 100] } },
      axes: [{}, { label: 'Errors (%)', values: (_u, ticks) => ticks.map((t) => `${t}%`) }],
      series: [
        {},
        {
          label: 'Error rate',
          stroke: '#d1242f',
          fill: 'rgba(209, 36, 47, 0.12)',
          width: 2,
          value: (_u, v) => (v === null ? '–' : formatPercent(v)),
          points: { show: !manyPoints },
        },
      ],
    }),
    [manyPoints],
  );
  const errorData = useMemo<uPlot.AlignedData>(() => [data.x, data.errorRate], [data]);

  const busiest = Object.entries(totals.byOperation)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');
  const callsSummary = `${totals.calls} calls in the ${periodLabel}: ${busiest}.`;
  const errorSummary =
    totals.errorRate === null
      ? 'No calls.'
      : `Error rate ${formatPercent(totals.errorRate)} in the ${periodLabel} (${totals.clientErrors} client errors, ${totals.serverErrors} server errors)${
          totals.worst
            ? `; highest ${formatPercent(totals.worst.rate)} in the ${unit} from ${formatDateTime(new Date(totals.worst.at).toISOString())}`
            : ''
        }.`;

  return (
    <div className="charts">
      <UPlotChart
        title={`Calls per ${unit} by operation`}
        summary={callsSummary}
        options={callsOptions}
        data={callsData}
      />
      <UPlotChart
        title={`Error rate (%) per ${unit}`}
        summary={errorSummary}
        options={errorOptions}
        data={errorData}
      />
    </div>
  );
}
