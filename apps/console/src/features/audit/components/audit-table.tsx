import { AUDIT_ACTION_LABELS, type AuditEntry, type User } from '@school/contract';
import { Link } from 'react-router';
import { Timestamp } from '../../../components/ui/timestamp';
import { paths } from '../../../config/paths';
import { detailLines } from '../utils/details';

/** Where an entry's target (`call 42`, `delivery 12 (…)`, `school 3 (…)`, `user 2 (ana)`) is shown. */
function targetHref(target: string): string | undefined {
  const match = /^(call|delivery|school|user|book|template) (\d+)\b/.exec(target);
  if (!match) return undefined;
  const id = Number(match[2]);
  switch (match[1]) {
    case 'call':
      return paths.call.href(id);
    case 'delivery':
      return paths.delivery.href(id);
    case 'school':
      return paths.schools.href();
    case 'user':
      return paths.users.href();
    case 'book':
      return paths.books.href();
    default:
      return paths.templates.href();
  }
}

export function AuditTable({ entries, users }: { entries: readonly AuditEntry[]; users: readonly User[] }) {
  const names = new Map(users.map((u) => [u.id, u.displayName]));
  return (
    <div className="table-wrap">
      <table className="audit cards">
        <caption className="visually-hidden">Audit log, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">User</th>
            <th scope="col">IP address</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <AuditRow
              key={entry.id}
              entry={entry}
              displayName={entry.userId === null ? undefined : names.get(entry.userId)}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function AuditRow({ entry, displayName }: { entry: AuditEntry; displayName: string | undefined }) {
  const lines = detailLines(entry.details, entry.action);
  // A Send is audited as it stood when sent; what came of its SMS since is on the call's page.
  const call =
    entry.action === 'send' && entry.target?.startsWith('call ') ? targetHref(entry.target) : undefined;
  return (
    <tr>
      <td className="audit-time" data-label="Time">
        <Timestamp iso={entry.at} variant="absolute" />
      </td>
      {/* For a failed login, the username as typed (its details say why it failed). */}
      <td data-label="User">
        {displayName ? (
          <>
            {displayName} <span className="muted">({entry.username})</span>
          </>
        ) : (
          (entry.username ?? <span className="muted">Unknown</span>)
        )}
      </td>
      <td className="param-value" data-label="IP address">
        {entry.ip}
      </td>
      <td data-label="Action">
        <span className={entry.action === 'login-failed' ? 'audit-failed' : undefined}>
          {AUDIT_ACTION_LABELS[entry.action]}
        </span>
      </td>
      <td data-label="Target">
        {entry.target === null ? (
          <span className="muted">—</span>
        ) : targetHref(entry.target) ? (
          <Link to={targetHref(entry.target) as string}>{entry.target}</Link>
        ) : (
          entry.target
        )}
      </td>
      <td data-label="Details">
        {lines.length === 0 && !call ? (
          <span className="muted">—</span>
        ) : (
          <ul className="params audit-details">
            {lines.map((line) => (
              <li key={line.key}>{line.text}</li>
            ))}
            {call ? (
              <li>
                <Link to={call}>
                  Its result now<span className="visually-hidden">: {entry.target}</span>
                </Link>
              </li>
            ) : null}
          </ul>
        )}
      </td>
    </tr>
  );
}
