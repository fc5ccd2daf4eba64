import type { School } from '@school/contract';
import { useEffect, useId } from 'react';
import { useFormContext } from 'react-hook-form';
import { Form, TextAreaField, TextField } from '../../../components/ui/form';
import { ProblemMessage } from '../../../components/ui/status';
import { ProblemError } from '../../../lib/api-client';
import { useCreateSchool } from '../api/create-school';
import { useUpdateSchool } from '../api/update-school';
import { emptySchool, type SchoolFormValues, schoolFormSchema, toFormValues } from '../utils/school-form';

const FIELDS = ['name', 'baseUrl', 'topicKey', 'allowedIps'] as const;

/** Puts the keyboard on the first field when the form opens to edit a school. */
function FocusFirst() {
  const { setFocus } = useFormContext<SchoolFormValues>();
  useEffect(() => setFocus('name'), [setFocus]);
  return null;
}

/** Adds a school, or with `editing` changes one; the rules are the contract's. */
export function SchoolForm({
  editing,
  onSaving,
  onSaved,
  onCancel,
}: {
  editing: School | null;
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
        options={{ defaultValues: editing ? toFormValues(editing) : emptySchool }}
        aria-labelledby={headingId}
        className="school-form"
        onSubmit={(input, methods) => {
          onSaving();
          const handlers = {
            onSuccess: (school: School) => {
              if (!editing) methods.reset(emptySchool);
              onSaved(school, !editing);
            },
            onError: (error: Error) => {
              // The server names the fields it refused (e.g. allowedIps.2): show them under the field.
              const errors = error instanceof ProblemError ? error.problem.errors : undefined;
              for (const [path, message] of Object.entries(errors ?? {})) {
                const name = FIELDS.find((f) => path === f || path.startsWith(`${f}.`));
                if (name) methods.setError(name, { type: 'server', message });
              }
            },
          };
          if (editing) update.mutate({ id: editing.id, input }, handlers);
          else create.mutate(input, handlers);
        }}
      >
        {() => (
          <>
            {editing ? <FocusFirst /> : null}
            <TextField
              name="name"
              label="name"
              description="The school's name, for staff and the {school} placeholder."
            />
            <TextField
              name="baseUrl"
              label="baseUrl"
              description="The URL the school sends as baseUrlSchool, e.g. https://school.example.org/."
              type="url"
              autoComplete="off"
              spellCheck={false}
            />
            <TextField
              name="topicKey"
              label="topicKey"
              description="Names its push topics: school-{topicKey} for notifications, school-{topicKey}-class-{class} for marks. 1 to 64 letters, digits, - or _."
              autoComplete="off"
              spellCheck={false}
            />
            <TextAreaField
              name="allowedIps"
              label="allowedIps"
              description="Callers allowed to send for this school: one IP address or CIDR range per line (e.g. 203.0.113.0/24). Empty: any caller."
              rows={4}
              spellCheck={false}
            />
            <div className="actions">
              <button type="submit" className="button button-primary" disabled={save.isPending}>
                {save.isPending ? 'Saving…' : editing ? 'Save changes' : 'Add school'}
              </button>
              {editing ? (
                <button type="button" className="button" onClick={onCancel}>
                  Cancel
                </button>
              ) : null}
            </div>
            {save.isError ? (
              <ProblemMessage error={save.error} prefix={editing ? 'Not saved' : 'Not added'} />
            ) : null}
          </>
        )}
      </Form>
    </section>
  );
}
