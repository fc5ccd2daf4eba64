import { passwordSchema, type User } from '@school/contract';
import { useId } from 'react';
import { z } from 'zod';
import { Form } from '../../../components/ui/form';
import { NewPasswordFields } from '../../../components/ui/password-fields';
import { FocusField, showFieldErrors } from '../../../components/ui/save-form';
import { ProblemMessage } from '../../../components/ui/status';
import { samePasswords } from '../../../lib/passwords';
import { useUpdateUser } from '../api/update-user';

const passwordFormSchema = z
  .object({ password: passwordSchema, confirm: z.string() })
  .refine(...samePasswords('password', 'confirm'));

/** Sets a new password for someone who forgot theirs; their sessions end. */
export function PasswordForm({
  user,
  onDone,
  onCancel,
}: {
  user: User;
  onDone: (user: User) => void;
  onCancel: () => void;
}) {
  const update = useUpdateUser();
  const headingId = useId();

  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>Set a new password for {user.username}</h2>
      <p className="hint">
        {user.displayName} is logged out everywhere and logs in with the new password: pass it on to them.
      </p>
      <Form
        schema={passwordFormSchema}
        options={{ defaultValues: { password: '', confirm: '' } }}
        aria-labelledby={headingId}
        className="form-plain"
        onSubmit={({ password }, methods) =>
          update.mutate(
            { id: user.id, input: { password } },
            { onSuccess: onDone, onError: (error) => showFieldErrors(error, ['password'], methods) },
          )
        }
      >
        {() => (
          <>
            <FocusField name="password" />
            <NewPasswordFields />
            <div className="actions">
              <button type="submit" className="button button-primary" disabled={update.isPending}>
                {update.isPending ? 'Saving…' : 'Set password'}
              </button>
              <button type="button" className="button" onClick={onCancel}>
                Cancel
              </button>
            </div>
            {update.isError ? <ProblemMessage error={update.error} prefix="Not changed" /> : null}
          </>
        )}
      </Form>
    </section>
  );
}
