import type { Template } from '@school/contract';
import { ConfirmButton } from '../../../components/ui/confirm';
import { ProblemMessage } from '../../../components/ui/status';
import { Timestamp } from '../../../components/ui/timestamp';
import { useDeleteTemplate } from '../api/delete-template';
import { GENERIC_TYPE } from '../utils/preview';
import { shadowedTemplates } from '../utils/template-form';

export function TemplatesTable({
  templates,
  onEdit,
}: {
  templates: readonly Template[];
  onEdit: (template: Template) => void;
}) {
  // The generic template first: it is the one every other type falls back on.
  const sorted = [...templates].sort(
    (a, b) =>
      Number(b.type === GENERIC_TYPE) - Number(a.type === GENERIC_TYPE) || a.type.localeCompare(b.type),
  );
  const shadowed = shadowedTemplates(templates);
  return (
    <div className="table-wrap">
      <table className="templates cards">
        <caption className="visually-hidden">Templates by notification type</caption>
        <thead>
          <tr>
            <th scope="col">
              Type <span className="muted">(TypeNotfication)</span>
            </th>
            <th scope="col">Title</th>
            <th scope="col">Body</th>
            <th scope="col">Updated</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {sorted.map((template) => (
            <TemplateRow
              key={template.id}
              template={template}
              shadowedBy={shadowed.get(template.id)}
              onEdit={onEdit}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function TemplateRow({
  template,
  shadowedBy,
  onEdit,
}: {
  template: Template;
  /** The older template that answers this one's type instead (their types differ only by case). */
  shadowedBy: Template | undefined;
  onEdit: (template: Template) => void;
}) {
  const remove = useDeleteTemplate();
  const generic = template.type === GENERIC_TYPE;
  const name = generic ? 'the generic template' : `the ${template.type} template`;
  return (
    <tr>
      <th scope="row" data-label="Type">
        <code>{template.type}</code>
        {generic ? <span className="muted topic-note">generic: any other type</span> : null}
        {shadowedBy ? (
          <span className="field-error topic-note">
            Not used: the <code>{shadowedBy.type}</code> template answers this type (types match whatever
            their case). Delete this one, or give it another type.
          </span>
        ) : null}
      </th>
      <td data-label="Title">{template.title}</td>
      <td data-label="Body">{template.body}</td>
      <td data-label="Updated">
        <Timestamp iso={template.updatedAt} />
      </td>
      <td className="cell-actions">
        <div className="row-actions">
          <button type="button" className="button button-small" onClick={() => onEdit(template)}>
            Edit <span className="visually-hidden">{name}</span>
          </button>
          {generic ? (
            <span className="muted">
              Cannot be deleted: it is the fallback for every type without a template.
            </span>
          ) : (
            <ConfirmButton
              question={`Delete ${name}? ${template.type} notifications will then use the generic template.`}
              confirmLabel="Yes, delete"
              pending={remove.isPending}
              onConfirm={() => remove.mutate(template.id)}
            >
              Delete <span className="visually-hidden">{name}</span>
            </ConfirmButton>
          )}
        </div>
        {remove.isError ? <ProblemMessage error={remove.error} prefix="Not deleted" /> : null}
      </td>
    </tr>
  );
}
