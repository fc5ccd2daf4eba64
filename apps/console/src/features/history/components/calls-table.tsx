import { BINDING_LABELS, type CallSummary } from '@school/contract';
import { Link, useLocation } from 'react-router';
import { paths } from '../../../config/paths';
import { formatDateTime, formatDuration, OUTCOME_LABELS, truncate } from '../../../lib/format';

function KeyParams({ params }: { params: CallSummary['params'] }) {
  const entries = Object.entries(params ?? {});
  if (entries.length === 0) return <span className="muted">{params ? 'none' : 'unreadable'}</span>;
  return (
    <ul className="params">
      {entries.map(([name, value]) => (
        <li key={name}>
          <span className="param-name">{name}</span>=
          <span className="param-value">{truncate(value, 32)}</span>
        </li>
      ))}
    </ul>
  );
}

export function CallsTable({ calls }: { calls: readonly CallSummary[] }) {
  const location = useLocation();
  return (
    <div className="table-wrap">
      <table className="calls">
        <caption className="visually-hidden">Calls, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Operation</th>
            <th scope="col">Binding</th>
            <th scope="col">Caller</th>
            <th scope="col">Key parameters</th>
            <th scope="col">Outcome</th>
            <th scope="col" className="numeric">
              Duration
            </th>
          </tr>
        </thead>
        <tbody>
          {calls.map((call) => (
            <tr key={call.id} className={`outcome-row-${call.outcome}`}>
              <td>
                {/* The list's filters travel with the link, so "Back to History" returns to this view. */}
                <Link to={paths.call.href(call.id)} state={{ search: location.search }}>
                  <span className="visually-hidden">Call {call.id},</span>{' '}
                  <time dateTime={call.at}>{formatDateTime(call.at)}</time>
                </Link>
              </td>
              <td>{call.operation ?? <span className="muted">{call.group} (unknown)</span>}</td>
              <td>{BINDING_LABELS[call.binding]}</td>
              <td>
                <span className="caller-ip">{call.callerIp}</span>
                {call.userAgent ? (
                  <span className="muted user-agent" title={call.userAgent}>
                    {truncate(call.userAgent, 30)}
                  </span>
                ) : null}
              </td>
              <td>
                <KeyParams params={call.params} />
              </td>
              <td>
                <span className={`badge badge-${call.outcome}`}>
                  {OUTCOME_LABELS[call.outcome]} {call.status}
                </span>
                {call.error ? (
                  <span className="call-error" title={call.error}>
                    {truncate(call.error, 60)}
                  </span>
                ) : null}
              </td>
              <td className="numeric">{formatDuration(call.durationMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
