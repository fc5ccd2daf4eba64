import type { School } from '@school/contract';
import { ConfirmButton } from '../../../components/ui/confirm';
import { ProblemMessage } from '../../../components/ui/status';
import { Timestamp } from '../../../components/ui/timestamp';
import { useDeleteSchool } from '../api/delete-school';

export function SchoolsTable({
  schools,
  onEdit,
}: {
  schools: readonly School[];
  onEdit: (school: School) => void;
}) {
  return (
    <div className="table-wrap">
      <table className="schools cards">
        <caption className="visually-hidden">Registered schools</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">
              Base URL <span className="muted">(baseUrl)</span>
            </th>
            <th scope="col">
              Topic key <span className="muted">(topicKey)</span>
            </th>
            <th scope="col">Push topics</th>
            <th scope="col">
              Allowed callers <span className="muted">(allowedIps)</span>
            </th>
            <th scope="col">Updated</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {schools.map((school) => (
            <SchoolRow key={school.id} school={school} onEdit={onEdit} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function SchoolRow({ school, onEdit }: { school: School; onEdit: (school: School) => void }) {
  const remove = useDeleteSchool();
  return (
    <tr>
      <td data-label="Name">{school.name}</td>
      <td className="param-value" data-label="Base URL">
        {school.baseUrl}
      </td>
      <td data-label="Topic key">
        <code className="key">{school.topicKey}</code>
      </td>
      <td data-label="Push topics">
        <code>{school.topic}</code>
        <span className="muted topic-note">
          marks: <code>{`${school.topic}-class-{id_class}`}</code>
        </span>
      </td>
      <td data-label="Allowed callers">
        {school.allowedIps.length === 0 ? (
          <span className="muted">any</span>
        ) : (
          <ul className="params">
            {school.allowedIps.map((ip) => (
              <li key={ip} className="param-value">
                {ip}
              </li>
            ))}
          </ul>
        )}
      </td>
      <td data-label="Updated">
        <Timestamp iso={school.updatedAt} />
      </td>
      <td className="cell-actions">
        <div className="row-actions">
          <button type="button" className="button button-small" onClick={() => onEdit(school)}>
            Edit <span className="visually-hidden">{school.name}</span>
          </button>
          <ConfirmButton
            question={`Remove ${school.name}? Its calls will then be refused as from an unknown school.`}
            confirmLabel="Yes, remove"
            pending={remove.isPending}
            onConfirm={() => remove.mutate(school.id)}
          >
            Delete <span className="visually-hidden">{school.name}</span>
          </ConfirmButton>
        </div>
        {remove.isError ? <ProblemMessage error={remove.error} prefix="Not removed" /> : null}
      </td>
    </tr>
  );
}
