import { operations, type ServiceInfo, type Stats } from '@school/contract';
import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { useSearchParams } from 'react-router';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { useRefusalWords } from '../../../lib/provider-refusal';
import { useSchools } from '../../../lib/schools';
import { getServiceInfoQueryOptions } from '../../../lib/service-info';
import { isOrganisationAdmin, useSession } from '../../../lib/session';
import { useStats } from '../api/get-stats';
import { useOpenedAt } from '../api/prefetch';
import { type ChartData, formatCount, formatMs, formatPercent, toChartData } from '../utils/chart-data';
import { BUCKETS, PERIODS, type Period, statsQueries, viewOf } from '../utils/period';
import type { Bucket } from '../utils/time-axis';
import { verdictOf } from '../utils/verdict';
import { CallsChart } from './calls-chart';
import { DeliveriesChart } from './deliveries-chart';
import { ErrorsChart, ErrorTables } from './errors-chart';
import { GettingStarted } from './getting-started';
import { LatencyChart } from './latency-chart';
import { VerdictPanel } from './verdict-panel';
import '../dashboard.css';

/** How long the providers' state read is taken as current (ms). */
const FOLLOW_MS = 15_000;

export function DashboardPage() {
  const [search, setSearch] = useSearchParams();
  const { period, bucket } = viewOf(search);
  // The queries prefetchDashboard (../api/prefetch.ts) starts when the page is opened.
  const [now, refresh] = useOpenedAt();
  const queries = useMemo(() => statsQueries({ period, bucket }, now), [now, period, bucket]);
  const stats = useStats(queries.current);
  const previousStats = useStats(queries.previous);
  // The providers' state changes as they answer: read again with the statistics, not kept for
  // the service's addresses' 5 minutes.
  const service = useQuery({ ...getServiceInfoQueryOptions(), staleTime: FOLLOW_MS });
  const providers = service.data?.providers;
  const refusalWords = useRefusalWords();
  // A console with no school yet: an admin is shown what to do first.
  const isAdmin = isOrganisationAdmin(useSession().data);
  const schools = useSchools({ enabled: isAdmin });
  const firstSteps = isAdmin && schools.data !== undefined && schools.data.length === 0;
  const data = useChartData(stats.data);
  const previous = useChartData(previousStats.data);

  const set = (key: string, value: string) => {
    const next = new URLSearchParams(search);
    next.set(key, value);
    setSearch(next, { replace: true });
  };

  const verdict = useMemo(
    () =>
      data
        ? verdictOf({
            data,
            previous,
            providers: providerRoles(providers),
            periodLabel: PERIODS[period].label.toLowerCase(),
            errors: stats.data?.errors,
            describeRefusal: refusalWords,
          })
        : undefined,
    [data, previous, providers, period, stats.data?.errors, refusalWords],
  );

  // The bucket the picture was drawn for (the previous one stays on screen while the next loads).
  const shownBucket: Bucket = stats.data?.bucket === 'day' ? 'day' : 'hour';
  const periodLabel = PERIODS[period].label.toLowerCase();
  return (
    <div className="page dashboard-page">
      <title>Dashboard · School Messaging</title>
      <h1>Dashboard</h1>
      {firstSteps ? <GettingStarted /> : null}
      <Toolbar
        period={period}
        bucket={bucket}
        set={set}
        onRefresh={() => {
          refresh();
          void service.refetch();
        }}
        updating={stats.isFetching && data !== undefined}
      />
      {stats.isPending ? (
        <Loading>Loading statistics…</Loading>
      ) : !data || !stats.data ? (
        <ErrorState error={stats.error} title="Could not load statistics" onRetry={() => stats.refetch()} />
      ) : data.totals.calls === 0 ? (
        <>
          {verdict && !verdict.ok ? <VerdictPanel verdict={verdict} /> : null}
          <EmptyState>No calls in this period.</EmptyState>
        </>
      ) : (
        <>
          {verdict ? <VerdictPanel verdict={verdict} /> : null}
          <Totals data={data} latency={stats.data.overallLatency} />
          <p className="muted">
            Select a bar or a point to list its calls (or deliveries); under each chart, “Show the figures”
            lists them with links.
          </p>
          <div className="charts">
            <CallsChart data={data} bucket={shownBucket} periodLabel={periodLabel} />
            <ErrorsChart data={data} bucket={shownBucket} periodLabel={periodLabel} />
            <ErrorTables stats={stats.data} data={data} />
            <LatencyChart data={data} bucket={shownBucket} periodLabel={periodLabel} />
            <DeliveriesChart data={data} bucket={shownBucket} periodLabel={periodLabel} />
          </div>
        </>
      )}
    </div>
  );
}

const OPERATION_NAMES = operations.map((op) => op.name);

/** Statistics as the charts draw them; undefined until they arrive. */
function useChartData(stats: Stats | undefined): ChartData | undefined {
  return useMemo(() => (stats ? toChartData(stats, OPERATION_NAMES) : undefined), [stats]);
}

/** The providers as the verdict names them: SMS, its fallback if there is one, push. */
function providerRoles(providers: ServiceInfo['providers'] | undefined) {
  return providers
    ? [
        { role: 'SMS', info: providers.sms },
        ...(providers.smsFallback ? [{ role: 'fallback SMS', info: providers.smsFallback }] : []),
        { role: 'push', info: providers.push },
      ]
    : [];
}

/** The period and bucket pickers (kept in the address), and Refresh. */
function Toolbar({
  period,
  bucket,
  set,
  onRefresh,
  updating,
}: {
  period: Period;
  bucket: Bucket;
  /** Sets `period` or `bucket` in the address. */
  set: (key: string, value: string) => void;
  onRefresh: () => void;
  /** New figures are on their way while the last ones are shown. */
  updating: boolean;
}) {
  return (
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
        Group by{' '}
        <select value={bucket} onChange={(e) => set('bucket', e.target.value)}>
          {Object.entries(BUCKETS).map(([key, label]) => (
            <option key={key} value={key}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <button type="button" className="button" onClick={onRefresh}>
        Refresh
      </button>
      {updating ? (
        <span className="muted" role="status">
          Updating…
        </span>
      ) : null}
    </div>
  );
}

/** The period's totals: calls, errors, time to answer, deliveries. */
function Totals({ data, latency }: { data: ChartData; latency: Stats['overallLatency'] }) {
  return (
    <dl className="dashboard-totals">
      <div>
        <dt>Calls</dt>
        <dd>{formatCount(data.totals.calls)}</dd>
      </div>
      <div>
        <dt>Errors</dt>
        <dd>
          {formatCount(data.totals.clientErrors + data.totals.serverErrors)}{' '}
          <span className="muted">({formatPercent(data.totals.errorRate ?? 0)})</span>
        </dd>
      </div>
      {latency ? (
        <div>
          <dt>Time to answer</dt>
          <dd>
            {formatMs(latency.p50Ms)}{' '}
            <span className="muted">median, {formatMs(latency.p95Ms)} for 95 %</span>
          </dd>
        </div>
      ) : null}
      <div>
        <dt>Deliveries</dt>
        <dd>
          {formatCount(
            Object.entries(data.totals.deliveries)
              .filter(([key]) => key !== 'failedAttempts')
              .reduce((n, [, v]) => n + v, 0),
          )}{' '}
          <span className="muted">({formatCount(data.totals.deliveries.dead)} dead)</span>
        </dd>
      </div>
    </dl>
  );
}
