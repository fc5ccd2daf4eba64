import type { School } from '@school/contract';
import { useId } from 'react';
import { Form, TextAreaField, TextField } from '../../../components/ui/form';
import { FocusField, SaveActions, saveOnSubmit } from '../../../components/ui/save-form';
import { useCreateSchool } from '../api/create-school';
import { useUpdateSchool } from '../api/update-school';
import { emptySchool, type SchoolFormValues, schoolFormSchema, toFormValues } from '../utils/school-form';

const FIELDS = ['name', 'baseUrl', 'topicKey', 'allowedIps'] as const;

/**
 * Adds a school, or with `editing` changes one; the rules are the contract's. `draft` starts a
 * new one filled in (a base URL the service did not know), its name focused.
 */
export function SchoolForm({
  editing,
  draft,
  onSaving,
  onSaved,
  onCancel,
}: {
  editing: School | null;
  draft?: SchoolFormValues | null;
  /** A save starts: an earlier "Saved." no longer applies. */
  onSaving: () => void;
  onSaved: (school: School, created: boolean) => void;
  onCancel: () => void;
}) {
  const create = useCreateSchool();
  const update = useUpdateSchool();
  const save = editing ? update : create;
  const headingId = useId();

  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>{editing ? `Edit ${editing.name}` : 'Add a school'}</h2>
      <Form
        schema={schoolFormSchema}
        options={{ defaultValues: editing ? toFormValues(editing) : (draft ?? emptySchool) }}
        aria-labelledby={headingId}
        className="school-form"
        onSubmit={saveOnSubmit({
          editing,
          create,
          update,
          empty: emptySchool,
          fields: FIELDS,
          onSaving,
          onSaved,
        })}
      >
        {() => (
          <>
            {editing || draft ? <FocusField name="name" /> : null}
            <TextField
              name="name"
              label="Name"
              description="The school's name, for staff and the {school} placeholder."
            />
            <TextField
              name="baseUrl"
              label={
                <>
                  Base URL <span className="muted">(baseUrl)</span>
                </>
              }
              description="The URL the school sends as baseUrlSchool, e.g. https://school.example.org/."
              type="url"
              autoComplete="off"
              spellCheck={false}
            />
            <TextField
              name="topicKey"
              label={
                <>
                  Topic key <span className="muted">(topicKey)</span>
                </>
              }
              description="Names its push topics: school-{topicKey} for notifications, school-{topicKey}-class-{class} for marks. 1 to 64 letters, digits, - or _."
              autoComplete="off"
              spellCheck={false}
            />
            <TextAreaField
              name="allowedIps"
              label={
                <>
                  Allowed callers <span className="muted">(allowedIps)</span>
                </>
              }
              description="Callers allowed to send for this school: one IP address or CIDR range per line (e.g. 203.0.113.0/24). Empty: any caller."
              rows={4}
              spellCheck={false}
            />
            <SaveActions save={save} editing={editing !== null} addLabel="Add school" onCancel={onCancel} />
          </>
        )}
      </Form>
    </section>
  );
}
