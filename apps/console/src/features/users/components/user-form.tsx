import { ROLE_LABELS, ROLES, type User, userCreateInputSchema } from '@school/contract';
import { useId } from 'react';
import { Controller } from 'react-hook-form';
import { Form, SelectField, TextField } from '../../../components/ui/form';
import { NEW_PASSWORD_HINT } from '../../../components/ui/password-fields';
import { SaveActions, showFieldErrors } from '../../../components/ui/save-form';
import { KeepDraft } from '../../../lib/draft';
import { ROLE_NAMES } from '../../../lib/format';
import { useSchools } from '../../../lib/schools';
import { useCreateUser } from '../api/create-user';
import { NO_SCHOOL_TICKED, SchoolPicker } from './school-picker';

const FIELDS = ['username', 'displayName', 'role', 'password', 'schoolIds'] as const;
const PASSWORD = ['password'];
const empty = { username: '', displayName: '', role: 'operator', password: '', schoolIds: null } as const;
// "Only these schools" with none ticked is a mistake, never every school.
const userFormSchema = userCreateInputSchema.refine((v) => v.schoolIds == null || v.schoolIds.length > 0, {
  path: ['schoolIds'],
  message: NO_SCHOOL_TICKED,
});
// The choices in one word, what each may do said below them: a choice of a whole sentence was cut
// in the closed select on a phone ("Admin — everything, includi…").
const roleOptions = ROLES.map((role) => ({ value: role, label: ROLE_NAMES[role] }));
const roleDescription = ROLES.map((role) => `${ROLE_LABELS[role]}.`).join(' ');

/** Adds a staff account with a first password the admin passes on; the rules are the contract's. */
export function UserForm({ onSaving, onSaved }: { onSaving: () => void; onSaved: (user: User) => void }) {
  const create = useCreateUser();
  const schools = useSchools();
  const headingId = useId();

  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>Add a user</h2>
      <Form
        schema={userFormSchema}
        options={{ defaultValues: empty }}
        aria-labelledby={headingId}
        className="form-plain"
        onSubmit={(values, methods) => {
          onSaving();
          create.mutate(values, {
            onSuccess: (user) => {
              methods.reset(empty);
              onSaved(user);
            },
            onError: (error) => showFieldErrors(error, FIELDS, methods),
          });
        }}
      >
        {() => (
          <>
            {/* Kept in the tab until the user is added; never the password. */}
            <KeepDraft draftKey="user:new" exclude={PASSWORD} />
            <TextField
              name="username"
              label="Username"
              description="What they type to log in: 2 to 64 letters, digits, dots, dashes, underscores or @."
              autoComplete="off"
              autoCapitalize="none"
              spellCheck={false}
            />
            <TextField
              name="displayName"
              label="Display name"
              description="Their name as others see it."
              autoComplete="off"
            />
            <SelectField name="role" label="Role" description={roleDescription} options={roleOptions} />
            <TextField
              name="password"
              label="Initial password"
              description={`${NEW_PASSWORD_HINT} Pass it on to them; they can change it once logged in.`}
              type="password"
              autoComplete="new-password"
            />
            <Controller
              name="schoolIds"
              render={({ field, fieldState }) => (
                <SchoolPicker
                  legend="Schools"
                  schools={schools.data}
                  value={field.value ?? null}
                  onChange={field.onChange}
                  error={fieldState.error?.message}
                />
              )}
            />
            <SaveActions save={create} editing={false} addLabel="Add user" onCancel={() => {}} />
          </>
        )}
      </Form>
    </section>
  );
}
