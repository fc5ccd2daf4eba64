import { AUDIT_ACTION_LABELS, type AuditEntry } from '@school/contract';
import { Timestamp } from '../../../components/ui/timestamp';
import { detailLines } from '../utils/details';

export function AuditTable({ entries }: { entries: readonly AuditEntry[] }) {
  return (
    <div className="table-wrap">
      <table className="audit">
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
            <AuditRow key={entry.id} entry={entry} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function AuditRow({ entry }: { entry: AuditEntry }) {
  const lines = detailLines(entry.details);
  return (
    <tr>
      <td className="audit-time">
        <Timestamp iso={entry.at} variant="absolute" />
      </td>
      {/* For a failed login, the username as typed (its details say why it failed). */}
      <td>{entry.username ?? <span className="muted">Unknown</span>}</td>
      <td className="param-value">{entry.ip}</td>
      <td>
        <span className={entry.action === 'login-failed' ? 'audit-failed' : undefined}>
          {AUDIT_ACTION_LABELS[entry.action]}
        </span>
      </td>
      <td>{entry.target ?? <span className="muted">—</span>}</td>
      <td>
        {lines.length === 0 ? (
          <span className="muted">—</span>
        ) : (
          <ul className="params audit-details">
            {lines.map((line) => (
              <li key={line.key}>{line.text}</li>
            ))}
          </ul>
        )}
      </td>
    </tr>
  );
}
