import {
  AUDIT_ACTION_LABELS,
  BINDING_LABELS,
  type DeliveryDetail,
  type PrivacyCall,
  type PrivacyReport,
} from '@school/contract';
import { useId } from 'react';
import { DeliveryKindAndProvider, DeliveryStatusBadge } from '../../../components/ui/delivery';
import { RecordLink } from '../../../components/ui/record-link';
import { EmptyState } from '../../../components/ui/status';
import { Timestamp } from '../../../components/ui/timestamp';
import { VerdictBadge } from '../../../components/ui/verdict';
import { verdictOfDeliveries } from '../../../lib/call-verdict';
import { privacyReportUrl } from '../api/find-report';
import { ATTEMPT_OUTCOME_LABELS, count, heldInWords } from '../utils/words';

/** privacy-report-20261120T090000.json: the CSV's name (the server's), for the JSON. */
const jsonName = (report: PrivacyReport): string =>
  `privacy-report-${report.generatedAt.replace(/[-:]/g, '').replace(/\..*/, '')}.json`;

/** Everything held about one number, as the server found it, with the report to download. */
export function ReportView({
  report,
  headingRef,
}: {
  report: PrivacyReport;
  headingRef?: React.Ref<HTMLHeadingElement>;
}) {
  const headingId = useId();
  const attempts = report.deliveries.reduce((n, d) => n + d.attemptLog.length, 0);
  const nothing =
    report.calls.length === 0 &&
    report.deliveries.length === 0 &&
    report.audit.length === 0 &&
    report.limitSlots === 0;
  return (
    <section className="privacy-report" aria-labelledby={headingId}>
      <h2 id={headingId} ref={headingRef} tabIndex={-1}>
        Held about <span className="privacy-phone">{report.phone}</span>
      </h2>
      <dl className="summary">
        <dt>Looked for as</dt>
        <dd>
          <ul className="params privacy-forms">
            {report.forms.map((form) => (
              <li key={form}>
                <code>{form}</code>
              </li>
            ))}
          </ul>
        </dd>
        <dt>Report made</dt>
        <dd>
          <Timestamp iso={report.generatedAt} variant="absolute" />
        </dd>
        <dt>Calls</dt>
        <dd>{report.calls.length}</dd>
        <dt>Deliveries</dt>
        <dd>
          {report.deliveries.length}
          {attempts > 0 ? <span className="muted"> ({count(attempts, 'attempt')})</span> : null}
        </dd>
        <dt>Audit entries</dt>
        <dd>{report.audit.length}</dd>
        <dt>AuthCode limit slots</dt>
        <dd>{report.limitSlots}</dd>
      </dl>
      <div className="toolbar">
        <a className="button" href={privacyReportUrl(report.phone, 'csv')} download>
          Download CSV
        </a>
        {/* The CSV is named by the server (Content-Disposition); the JSON, as the CSV is. */}
        <a className="button" href={privacyReportUrl(report.phone, 'json')} download={jsonName(report)}>
          Download JSON
        </a>
      </div>
      {nothing ? (
        <EmptyState>Nothing is held about this number.</EmptyState>
      ) : (
        <>
          <CallsHeld calls={report.calls} deliveries={report.deliveries} />
          <DeliveriesHeld deliveries={report.deliveries} />
          <AuditHeld entries={report.audit} />
        </>
      )}
    </section>
  );
}

/**
 * One kind of record that holds the number: a heading with how many, and their table (cards on a
 * phone, each cell labelled by its column), or a line saying none does.
 */
function HeldTable({
  title,
  count,
  none,
  className,
  columns,
  children,
}: {
  title: string;
  count: number;
  /** What to say when no record of this kind holds the number. */
  none: string;
  className: string;
  columns: readonly string[];
  /** The rows, a `<td data-label>` per column. */
  children: React.ReactNode;
}) {
  const id = useId();
  return (
    <>
      <h3 id={id}>
        {title} ({count})
      </h3>
      {count === 0 ? (
        <p className="muted">{none}</p>
      ) : (
        <div className="table-wrap">
          <table className={`cards ${className}`} aria-labelledby={id}>
            <thead>
              <tr>
                {columns.map((column) => (
                  <th key={column} scope="col">
                    {column}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>{children}</tbody>
          </table>
        </div>
      )}
    </>
  );
}

function CallsHeld({
  calls,
  deliveries,
}: {
  calls: readonly PrivacyCall[];
  deliveries: readonly DeliveryDetail[];
}) {
  return (
    <HeldTable
      title="Calls"
      count={calls.length}
      none="No call holds it."
      className="privacy-calls"
      columns={['Call', 'Time', 'Operation', 'Protocol', 'Number found in', 'Result']}
    >
      {calls.map((call) => (
        <tr key={call.id}>
          <td data-label="Call">
            <RecordLink record="call" id={call.id} />
          </td>
          <td data-label="Time">
            <Timestamp iso={call.at} variant="absolute" />
          </td>
          <td data-label="Operation">
            {call.operation ?? <span className="muted">Unknown operation ({call.group})</span>}
          </td>
          <td data-label="Protocol">{BINDING_LABELS[call.binding]}</td>
          <td data-label="Number found in">{heldInWords(call.heldIn)}</td>
          <td data-label="Result">
            {/* From its deliveries in the report: the call's own summary is not filled here. */}
            <VerdictBadge
              verdict={verdictOfDeliveries(
                call,
                deliveries.filter((d) => d.callId === call.id),
              )}
            />
          </td>
        </tr>
      ))}
    </HeldTable>
  );
}

function DeliveriesHeld({ deliveries }: { deliveries: readonly DeliveryDetail[] }) {
  return (
    <HeldTable
      title="Deliveries"
      count={deliveries.length}
      none="No SMS or push holds it."
      className="privacy-deliveries"
      columns={['Delivery', 'Kind', 'Recipient', 'Status', 'Attempts', 'Queued', 'Call']}
    >
      {deliveries.map((d) => (
        <tr key={d.id}>
          <td data-label="Delivery">
            <RecordLink record="delivery" id={d.id} />
          </td>
          <td data-label="Kind">
            <DeliveryKindAndProvider delivery={d} />
          </td>
          <td data-label="Recipient">
            <code className="privacy-recipient">{d.recipient}</code>
          </td>
          <td data-label="Status">
            <DeliveryStatusBadge status={d.status} />
          </td>
          <td data-label="Attempts">
            <Attempts delivery={d} />
          </td>
          <td data-label="Queued">
            <Timestamp iso={d.createdAt} variant="absolute" />
          </td>
          <td data-label="Call">
            <RecordLink record="call" id={d.callId} />
          </td>
        </tr>
      ))}
    </HeldTable>
  );
}

/** A delivery's attempts, oldest first: when, and what came of each. */
function Attempts({ delivery }: { delivery: DeliveryDetail }) {
  if (delivery.attemptLog.length === 0) return <span className="muted">None yet</span>;
  return (
    <ol className="params privacy-attempts">
      {delivery.attemptLog.map((a) => (
        <li key={a.id}>
          <Timestamp iso={a.startedAt} variant="absolute" />:{' '}
          {/* The log provider's "sent" wrote to the server's log: nothing went to the phone. */}
          {a.outcome === 'sent' && delivery.status === 'logged'
            ? 'Logged'
            : ATTEMPT_OUTCOME_LABELS[a.outcome ?? 'running']}
          {a.status !== null ? <span className="muted"> (HTTP {a.status})</span> : null}
        </li>
      ))}
    </ol>
  );
}

function AuditHeld({ entries }: { entries: PrivacyReport['audit'] }) {
  return (
    <HeldTable
      title="Audit entries"
      count={entries.length}
      none="No audit entry names it."
      className="privacy-audit"
      columns={['Time', 'User', 'Action', 'Target']}
    >
      {entries.map((entry) => (
        <tr key={entry.id}>
          <td data-label="Time">
            <Timestamp iso={entry.at} variant="absolute" />
          </td>
          <td data-label="User">{entry.username ?? <span className="muted">Unknown</span>}</td>
          <td data-label="Action">{AUDIT_ACTION_LABELS[entry.action]}</td>
          <td data-label="Target">{entry.target ?? <span className="muted">—</span>}</td>
        </tr>
      ))}
    </HeldTable>
  );
}
