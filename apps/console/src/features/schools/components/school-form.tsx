import type { School } from '@school/contract';
import { useEffect, useId, useState } from 'react';
import { useFormContext, useWatch } from 'react-hook-form';
import { Form, TextAreaField, TextField } from '../../../components/ui/form';
import { FocusField, SaveActions, saveOnSubmit } from '../../../components/ui/save-form';
import { KeepDraft } from '../../../lib/draft';
import { useCreateSchool } from '../api/create-school';
import { useUpdateSchool } from '../api/update-school';
import { emptySchool, type SchoolFormValues, schoolFormSchema, toFormValues } from '../utils/school-form';

const FIELDS = ['name', 'baseUrl', 'topicKey', 'allowedIps'] as const;

/** A topic key from a school's name: "St Mary's High" → "st-marys-high" (ASCII, at most 64). */
export function topicKeyOf(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/['’]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
}

/** While a new school's topic key is not typed by hand (`typed`), it follows the name. */
function SuggestTopicKey({ typed }: { typed: boolean }) {
  const { control, setValue } = useFormContext<SchoolFormValues>();
  const name = useWatch({ control, name: 'name' });
  useEffect(() => {
    if (!typed) setValue('topicKey', topicKeyOf(name ?? ''));
  }, [name, typed, setValue]);
  return null;
}

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
  // Typed in by hand: the name no longer suggests it (until the form starts afresh).
  const [topicTyped, setTopicTyped] = useState(false);

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
          onSaved: (school, created) => {
            // The form starts afresh: the next school's key follows its name again.
            setTopicTyped(false);
            onSaved(school, created);
          },
        })}
      >
        {() => (
          <>
            {editing || draft ? <FocusField name="name" /> : null}
            {editing ? null : <SuggestTopicKey typed={topicTyped} />}
            {/* A new school's fields are kept in the tab until it is added (not one from a link). */}
            {editing || draft ? null : <KeepDraft draftKey="school:new" />}
            <TextField
              name="name"
              label="Name"
              description="The school's name, for staff and the {school} placeholder."
            />
            <TextField
              name="baseUrl"
              label="Base URL"
              description="The school's address, as its apps send it (baseUrlSchool), e.g. https://school.example.org/."
              type="url"
              autoComplete="off"
              spellCheck={false}
            />
            <TextField
              name="topicKey"
              registerOptions={{ onChange: () => setTopicTyped(true) }}
              label="Topic key"
              description="Names its push topics: school-<key> for notifications, school-<key>-class-<class> for marks (the class as SendMarkNotes sends it in id_class). 1 to 64 letters, digits, - or _. Suggested from the name."
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
