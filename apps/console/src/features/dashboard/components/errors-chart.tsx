import type { Outcome, Stats } from '@school/contract';
import { useId } from 'react';
import { Link } from 'react-router';
import type uPlot from 'uplot';
import { refusalReason } from '../../../lib/call-reason';
import { formatDateTime, OUTCOME_LABELS } from '../../../lib/format';
import {
  bucketRange,
  type ChartData,
  formatCount,
  formatPercent,
  seriesAt,
  UNKNOWN_OPERATION,
} from '../utils/chart-data';
import { historyHref } from '../utils/links';
import { operationLabel } from './calls-chart';
import { type ChartProps, useBarChart } from './chart-setup';
import { FiguresTable } from './figures-table';
import { UPlotChart } from './uplot-chart';

const CLIENT = '#9a6700';
const SERVER = '#d1242f';
const RATE = '#57606a';
const OUTCOMES = ['client-error', 'server-error'] as const;

/** Client and server errors stacked; the error rate as a line on the `%` scale. */
const series = (data: ChartData) => ({
  stacked: [
    { label: 'Client errors', color: CLIENT, values: data.clientErrors },
    { label: 'Server errors', color: SERVER, values: data.serverErrors },
  ],
  lines: [
    {
      label: 'Error rate',
      color: RATE,
      values: data.errorRate,
      scale: '%',
      format: formatPercent,
      dash: [6, 4],
    },
  ],
});

/** The error rate's own axis, on the right. */
const AXES: uPlot.Axis[] = [
  {
    scale: '%',
    side: 1,
    label: 'Error rate',
    grid: { show: false },
    values: (_u, ticks) => ticks.map((t) => `${t}%`),
  },
];

/**
 * Errors per bucket: client errors (4xx, and SOAP faults that blame the caller) and server errors
 * (5xx) as stacked bars, the error rate as a line on its own axis. A bar links to History with that
 * outcome and the bucket's time.
 */
export function ErrorsChart({ data, bucket, periodLabel }: ChartProps) {
  const chart = useBarChart({ data, bucket }, 'Errors', series, AXES);
  const { totals } = data;
  const hrefOf = (outcome: Outcome, i: number) => historyHref(bucketRange(data, i), { outcome });

  const summary =
    totals.errorRate === null
      ? 'No calls.'
      : `Error rate ${formatPercent(totals.errorRate)} in the ${periodLabel} (${formatCount(totals.clientErrors)} client errors, ${formatCount(totals.serverErrors)} server errors)${
          totals.worst
            ? `; highest ${formatPercent(totals.worst.rate)} in the ${bucket} from ${formatDateTime(new Date(totals.worst.at).toISOString())}`
            : ''
        }.`;

  return (
    <UPlotChart
      title={`Errors per ${bucket}`}
      summary={summary}
      {...chart}
      hrefAt={(i, y) => {
        const s = seriesAt([data.clientErrors, data.serverErrors], i, y);
        return s >= 0 ? hrefOf(OUTCOMES[s] as Outcome, i) : undefined;
      }}
    >
      <p className="chart-note">
        Client errors are answers that blame the caller (every 4xx, and SOAP faults of type Client); server
        errors are failures inside the service (5xx).
      </p>
      <FiguresTable
        data={data}
        bucket={bucket}
        caption={`Errors per ${bucket}`}
        columns={[
          { label: 'Client errors', values: data.clientErrors, href: (i) => hrefOf('client-error', i) },
          { label: 'Server errors', values: data.serverErrors, href: (i) => hrefOf('server-error', i) },
          { label: 'Error rate', values: data.errorRate, format: formatPercent },
        ]}
      />
    </UPlotChart>
  );
}

/**
 * What a status class means to staff: ASMX answers a caller's mistake (a missing parameter) with a
 * 500 too, so "500 Client error" would read as a contradiction; the outcome says whose fault it was.
 */
const OUTCOME_MEANINGS: Record<Exclude<Outcome, 'ok'>, string> = {
  'client-error': "Refused: the caller's request was wrong",
  'server-error': 'Failed: a fault on the service’s side',
};

/** A recorded error led by its reason in plain words ("Unreadable XML"), the text as recorded below. */
function ErrorMessage({
  error,
  status,
  outcome,
}: {
  error: string | null;
  status: number;
  outcome: Outcome;
}) {
  const reason = outcome === 'client-error' ? refusalReason(error, status) : undefined;
  if (!reason) return error ?? <span className="muted">(no message recorded)</span>;
  return (
    <>
      <span className="error-reason">{reason.charAt(0).toUpperCase() + reason.slice(1)}</span>
      {error ? <span className="muted error-recorded">{error}</span> : null}
    </>
  );
}

/** The period's errors by status, and the most frequent by operation, status and message. */
export function ErrorTables({ stats, data }: { stats: Stats; data: ChartData }) {
  const id = useId();
  const { statuses, errors, otherErrors } = stats;
  return (
    <section className="error-tables" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Errors by status and message</h2>
      {statuses.length === 0 ? (
        <p className="muted">No errors in this period.</p>
      ) : (
        <>
          <div className="table-wrap">
            <table className="cards">
              <caption>By status</caption>
              <thead>
                <tr>
                  <th scope="col">Status</th>
                  <th scope="col">Meaning</th>
                  <th scope="col" className="numeric">
                    Calls
                  </th>
                </tr>
              </thead>
              <tbody>
                {statuses.map((s) => (
                  <tr key={`${s.status} ${s.outcome}`}>
                    <td data-label="Status">{s.status}</td>
                    <td data-label="Meaning">{OUTCOME_MEANINGS[s.outcome]}</td>
                    <td className="numeric" data-label="Calls">
                      {formatCount(s.count)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="table-wrap">
            <table className="cards">
              <caption>Most frequent messages</caption>
              <thead>
                <tr>
                  <th scope="col" className="numeric">
                    Calls
                  </th>
                  <th scope="col">Operation</th>
                  <th scope="col">Status</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {errors.map((e) => (
                  <tr key={`${e.operation} ${e.status} ${e.outcome} ${e.error}`}>
                    <td className="numeric" data-label="Calls">
                      <Link
                        to={historyHref(data, {
                          operation: e.operation ?? UNKNOWN_OPERATION,
                          outcome: e.outcome,
                        })}
                      >
                        {formatCount(e.count)}{' '}
                        <span className="visually-hidden">
                          {`${OUTCOME_LABELS[e.outcome].toLowerCase()}s of ${operationLabel(e.operation ?? UNKNOWN_OPERATION)} in History`}
                        </span>
                      </Link>
                    </td>
                    <td data-label="Operation">{operationLabel(e.operation ?? UNKNOWN_OPERATION)}</td>
                    <td data-label="Status">
                      {e.status}{' '}
                      <span className="muted">{e.outcome === 'client-error' ? 'refused' : 'failed'}</span>
                    </td>
                    <td className="error-message" data-label="Message">
                      <ErrorMessage error={e.error} status={e.status} outcome={e.outcome} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {otherErrors > 0 ? (
            <p className="muted">
              And {formatCount(otherErrors)} more {otherErrors === 1 ? 'error' : 'errors'} with other
              messages.
            </p>
          ) : null}
        </>
      )}
    </section>
  );
}
