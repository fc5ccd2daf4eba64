import type { User } from '@school/contract';
import { useId, useState } from 'react';
import { ProblemMessage } from '../../../components/ui/status';
import { useSchools } from '../../../lib/schools';
import { useUpdateUser } from '../api/update-user';
import { NO_SCHOOL_TICKED, SchoolPicker } from './school-picker';

/**
 * Changes the schools a user is limited to. It holds from their next request: no new login, and a
 * live History or an export they have open ends and is asked again with the new schools.
 */
export function SchoolsForm({
  user,
  onDone,
  onCancel,
}: {
  user: User;
  onDone: (user: User) => void;
  onCancel: () => void;
}) {
  const update = useUpdateUser();
  const schools = useSchools();
  const headingId = useId();
  const [value, setValue] = useState<number[] | null>(user.schoolIds);
  const [error, setError] = useState<string | undefined>();

  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>Schools of {user.username}</h2>
      <p className="hint">
        {user.displayName} sees the calls, deliveries and figures of these schools, and sends for them. The
        change holds from their next click.
        {user.sso ? ' Single sign-on may set them again at their next sign-in (OIDC_SCHOOLS_CLAIM).' : ''}
      </p>
      <form
        noValidate
        aria-labelledby={headingId}
        className="form-plain"
        onSubmit={(event) => {
          event.preventDefault();
          if (value !== null && value.length === 0) {
            setError(NO_SCHOOL_TICKED);
            return;
          }
          setError(undefined);
          update.mutate({ id: user.id, input: { schoolIds: value } }, { onSuccess: onDone });
        }}
      >
        <SchoolPicker
          legend="Schools"
          schools={schools.data}
          value={value}
          onChange={(next) => {
            setValue(next);
            if (next === null || next.length > 0) setError(undefined);
          }}
          error={error}
        />
        <div className="actions">
          <button type="submit" className="button button-primary" disabled={update.isPending}>
            {update.isPending ? 'Saving…' : 'Save schools'}
          </button>
          <button type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
        {update.isError ? <ProblemMessage error={update.error} prefix="Not changed" /> : null}
      </form>
    </section>
  );
}
