import {
  AUDIT_ACTION_LABELS,
  BINDING_LABELS,
  type DeliveryDetail,
  type PrivacyCall,
  type PrivacyReport,
} from '@school/contract';
import { useId } from 'react';
import { Link } from 'react-router';
import { EmptyState } from '../../../components/ui/status';
import { Timestamp } from '../../../components/ui/timestamp';
import { VerdictBadge } from '../../../components/ui/verdict';
import { paths } from '../../../config/paths';
import { verdictOfDeliveries } from '../../../lib/call-verdict';
import { DELIVERY_KIND_LABELS, DELIVERY_STATUS_LABELS } from '../../../lib/format';
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

function CallsHeld({
  calls,
  deliveries,
}: {
  calls: readonly PrivacyCall[];
  deliveries: readonly DeliveryDetail[];
}) {
  const id = useId();
  return (
    <>
      <h3 id={id}>Calls ({calls.length})</h3>
      {calls.length === 0 ? (
        <p className="muted">No call holds it.</p>
      ) : (
        <div className="table-wrap">
          <table className="cards privacy-calls" aria-labelledby={id}>
            <thead>
              <tr>
                <th scope="col">Call</th>
                <th scope="col">Time</th>
                <th scope="col">Operation</th>
                <th scope="col">Protocol</th>
                <th scope="col">Number found in</th>
                <th scope="col">Result</th>
              </tr>
            </thead>
            <tbody>
              {calls.map((call) => (
                <tr key={call.id}>
                  <td data-label="Call">
                    <Link to={paths.call.href(call.id)}>
                      <span className="visually-hidden">Call</span> #{call.id}
                    </Link>
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
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function DeliveriesHeld({ deliveries }: { deliveries: readonly DeliveryDetail[] }) {
  const id = useId();
  return (
    <>
      <h3 id={id}>Deliveries ({deliveries.length})</h3>
      {deliveries.length === 0 ? (
        <p className="muted">No SMS or push holds it.</p>
      ) : (
        <div className="table-wrap">
          <table className="cards privacy-deliveries" aria-labelledby={id}>
            <thead>
              <tr>
                <th scope="col">Delivery</th>
                <th scope="col">Kind</th>
                <th scope="col">Recipient</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Queued</th>
                <th scope="col">Call</th>
              </tr>
            </thead>
            <tbody>
              {deliveries.map((d) => (
                <tr key={d.id}>
                  <td data-label="Delivery">
                    <Link to={paths.delivery.href(d.id)}>
                      <span className="visually-hidden">Delivery</span> #{d.id}
                    </Link>
                  </td>
                  <td data-label="Kind">
                    {DELIVERY_KIND_LABELS[d.kind]} <span className="muted">via {d.provider}</span>
                  </td>
                  <td data-label="Recipient">
                    <code className="privacy-recipient">{d.recipient}</code>
                  </td>
                  <td data-label="Status">
                    <span className={`badge badge-delivery-${d.status}`}>
                      {DELIVERY_STATUS_LABELS[d.status]}
                    </span>
                  </td>
                  <td data-label="Attempts">
                    <Attempts delivery={d} />
                  </td>
                  <td data-label="Queued">
                    <Timestamp iso={d.createdAt} variant="absolute" />
                  </td>
                  <td data-label="Call">
                    <Link to={paths.call.href(d.callId)}>
                      <span className="visually-hidden">Call</span> #{d.callId}
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
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
  const id = useId();
  return (
    <>
      <h3 id={id}>Audit entries ({entries.length})</h3>
      {entries.length === 0 ? (
        <p className="muted">No audit entry names it.</p>
      ) : (
        <div className="table-wrap">
          <table className="cards privacy-audit" aria-labelledby={id}>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">User</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
              </tr>
            </thead>
            <tbody>
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
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
