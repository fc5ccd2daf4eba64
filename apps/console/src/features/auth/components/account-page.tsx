import { passwordChangeInputSchema, ROLE_LABELS } from '@school/contract';
import { useState } from 'react';
import { z } from 'zod';
import { Form } from '../../../components/ui/form';
import { CurrentPasswordField, NewPasswordFields } from '../../../components/ui/password-fields';
import { namesAField, showFieldErrors } from '../../../components/ui/save-form';
import { ProblemMessage } from '../../../components/ui/status';
import { samePasswords } from '../../../lib/passwords';
import { useSession } from '../../../lib/session';
import { useChangePassword } from '../api/change-password';
import { useLoginOptions } from '../api/get-login-options';
import { SecondFactorSection } from './second-factor-section';

const passwordFormSchema = passwordChangeInputSchema
  .extend({ confirm: z.string() })
  .refine(...samePasswords('newPassword', 'confirm'));

const empty = { currentPassword: '', newPassword: '', confirm: '' };
/** The fields the server may name in a refusal (the confirmation is the form's own). */
const FIELDS = ['currentPassword', 'newPassword'] as const;

/**
 * /account: who is logged in, their own password and second factor; for a single sign-on, where
 * those are kept instead.
 */
export function AccountPage() {
  const session = useSession().data;
  const user = session?.user;
  const sso = useLoginOptions().data?.sso;

  return (
    <div className="page account-page">
      <title>Account and security · School Messaging</title>
      <h1>Account and security</h1>
      {user ? (
        <dl className="summary">
          <dt>Name</dt>
          <dd>{user.displayName}</dd>
          <dt>Username</dt>
          <dd>{user.username}</dd>
          <dt>Role</dt>
          <dd>{ROLE_LABELS[user.role]}</dd>
        </dl>
      ) : null}

      {session?.method === 'sso' ? (
        <section className="card" aria-labelledby="sign-in-heading">
          <h2 id="sign-in-heading">Signing in</h2>
          <p>
            You log in with {sso?.label ?? 'your school account'}. Your password and second factor are kept
            there: change them with your school’s IT. Your role here follows your groups there, read at each
            login.
          </p>
        </section>
      ) : session ? (
        <>
          <SecondFactorSection
            enabled={session.secondFactor.enabled}
            required={session.secondFactor.required}
          />
          <ChangePassword username={user?.username ?? ''} />
        </>
      ) : null}
    </div>
  );
}

/** One's own password: the current one, the new one twice. */
function ChangePassword({ username }: { username: string }) {
  const change = useChangePassword();
  const [done, setDone] = useState(false);
  return (
    <section className="card" aria-labelledby="change-password-heading">
      <h2 id="change-password-heading">Change password</h2>
      <Form
        schema={passwordFormSchema}
        options={{ defaultValues: empty }}
        aria-labelledby="change-password-heading"
        className="form-plain"
        onSubmit={({ currentPassword, newPassword }, methods) => {
          setDone(false);
          change.mutate(
            { currentPassword, newPassword },
            {
              onSuccess: () => {
                methods.reset(empty);
                setDone(true);
              },
              onError: (error) => {
                if (showFieldErrors(error, FIELDS, methods)) {
                  methods.setFocus('currentPassword');
                }
              },
            },
          );
        }}
      >
        {() => (
          <>
            {/* For password managers: whose password this is (not sent). */}
            <input type="text" name="username" autoComplete="username" value={username} readOnly hidden />
            <CurrentPasswordField name="currentPassword" label="Current password" />
            <NewPasswordFields name="newPassword" />
            <div className="actions">
              <button type="submit" className="button button-primary" disabled={change.isPending}>
                {change.isPending ? 'Saving…' : 'Change password'}
              </button>
            </div>
            {change.isError && !namesAField(change.error, FIELDS) ? (
              <ProblemMessage error={change.error} prefix="Not changed" />
            ) : null}
          </>
        )}
      </Form>
      <p role="status" className="page-status">
        {done ? 'Your password is changed. You stay logged in here; your other sessions have ended.' : ''}
      </p>
    </section>
  );
}
