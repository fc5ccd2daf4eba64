import type { Role, School, User } from '@school/contract';
import { ConfirmButton } from '../../../components/ui/confirm';
import { ProblemMessage } from '../../../components/ui/status';
import { Timestamp } from '../../../components/ui/timestamp';
import { ROLE_NAMES } from '../../../lib/format';
import { useResetSecondFactor } from '../api/reset-second-factor';
import { useUpdateUser } from '../api/update-user';
import { schoolNames } from './school-picker';

const article = (role: Role) => (role === 'admin' ? 'an admin' : 'an operator');

export function UsersTable({
  users,
  schools,
  me,
  onSetPassword,
  onSetSchools,
  onChanged,
}: {
  users: readonly User[];
  /** The registered schools, to name a user's by (undefined while they load). */
  schools: readonly School[] | undefined;
  /** The id of the person logged in. */
  me: number | undefined;
  onSetPassword: (user: User) => void;
  onSetSchools: (user: User) => void;
  /** A change was saved: what to tell the reader. */
  onChanged: (message: string) => void;
}) {
  // The last enabled admin of every school can be neither disabled, made an operator, nor limited
  // to schools (the server refuses it): their row says so instead of offering it.
  const everySchool = (u: User) => u.role === 'admin' && !u.disabled && u.schoolIds === null;
  const enabledAdmins = users.filter(everySchool).length;
  return (
    <div className="table-wrap">
      <table className="users cards">
        <caption className="visually-hidden">Staff accounts</caption>
        <thead>
          <tr>
            <th scope="col">Username</th>
            <th scope="col">Display name</th>
            <th scope="col">Role</th>
            <th scope="col">Schools</th>
            <th scope="col">Status</th>
            <th scope="col">Sign-in</th>
            <th scope="col">Last login</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {users.map((user) => (
            <UserRow
              key={user.id}
              user={user}
              schools={schoolNames(user.schoolIds, schools)}
              isMe={user.id === me}
              lastAdmin={enabledAdmins === 1 && everySchool(user)}
              onSetPassword={onSetPassword}
              onSetSchools={onSetSchools}
              onChanged={onChanged}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function UserRow({
  schools,
  ...actions
}: UserActionsProps & {
  /** The user's schools, by name. */
  schools: string;
}) {
  const { user, isMe } = actions;
  return (
    <tr className={user.disabled ? 'user-disabled' : undefined}>
      <td data-label="Username" className="user-long">
        <code className="key">{user.username}</code>
        {isMe ? <span className="muted"> (you)</span> : null}
      </td>
      <td data-label="Display name" className="user-long">
        {user.displayName}
      </td>
      <td data-label="Role">{ROLE_NAMES[user.role]}</td>
      <td data-label="Schools" className="user-long">
        {user.schoolIds === null ? <span className="muted">{schools}</span> : schools}
      </td>
      <td data-label="Status">
        <span className={`badge ${user.disabled ? 'badge-neutral' : 'badge-ok'}`}>
          {user.disabled ? 'Disabled' : 'Active'}
        </span>
      </td>
      <td data-label="Sign-in">
        <SignIn user={user} />
      </td>
      <td data-label="Last login">
        {user.lastLoginAt ? <Timestamp iso={user.lastLoginAt} /> : <span className="muted">Never</span>}
      </td>
      <td className="cell-actions">
        <UserActions {...actions} />
      </td>
    </tr>
  );
}

/**
 * What an admin can do to a user: their role, enabling or disabling them, their schools, their
 * password, their second factor; none of the first three to the last organisation-wide admin.
 */
interface UserActionsProps {
  user: User;
  isMe: boolean;
  /** The only enabled admin of every school. */
  lastAdmin: boolean;
  onSetPassword: (user: User) => void;
  onSetSchools: (user: User) => void;
  onChanged: (message: string) => void;
}

function UserActions({ user, isMe, lastAdmin, onSetPassword, onSetSchools, onChanged }: UserActionsProps) {
  const update = useUpdateUser();
  const reset = useResetSecondFactor();
  const changing = update.isPending ? update.variables.input : undefined;
  const other: Role = user.role === 'admin' ? 'operator' : 'admin';
  const who = isMe ? 'your own account' : `${user.username} (${user.displayName})`;

  return (
    <>
      <div className="row-actions">
        {lastAdmin ? (
          <p className="muted last-admin">
            The only admin of every school: make someone else one before{' '}
            {isMe
              ? 'you step down, are limited to schools or are'
              : 'this one steps down, is limited to schools or is'}{' '}
            disabled.
          </p>
        ) : null}
        {lastAdmin ? null : (
          <ConfirmButton
            question={
              other === 'admin'
                ? `Make ${who} an admin? Admins manage books, schools, templates and users, and read the audit log.`
                : `Make ${who} an operator? Operators can no longer manage books, schools, templates or users, nor read the audit log.`
            }
            confirmLabel={`Yes, make ${article(other)}`}
            pending={changing?.role !== undefined}
            onConfirm={() =>
              update.mutateAsync(
                { id: user.id, input: { role: other } },
                { onSuccess: (saved) => onChanged(`${saved.username} is now ${article(saved.role)}.`) },
              )
            }
          >
            Make <span className="visually-hidden">{user.username} an</span> {other}
          </ConfirmButton>
        )}
        {lastAdmin ? null : user.disabled ? (
          <button
            type="button"
            className="button button-small"
            disabled={update.isPending}
            onClick={() =>
              update.mutate(
                { id: user.id, input: { disabled: false } },
                { onSuccess: (saved) => onChanged(`${saved.username} is enabled and can log in again.`) },
              )
            }
          >
            Enable <span className="visually-hidden">{user.username}</span>
          </button>
        ) : (
          <ConfirmButton
            question={
              isMe
                ? 'Disable your own account? You are logged out at once and cannot log in again until another admin enables it.'
                : `Disable ${who}? They are logged out at once and cannot log in until enabled again.`
            }
            confirmLabel="Yes, disable"
            pending={changing?.disabled !== undefined}
            onConfirm={() =>
              update.mutateAsync(
                { id: user.id, input: { disabled: true } },
                { onSuccess: (saved) => onChanged(`${saved.username} is disabled and was logged out.`) },
              )
            }
          >
            Disable <span className="visually-hidden">{user.username}</span>
          </ConfirmButton>
        )}
        {lastAdmin ? null : (
          <button type="button" className="button button-small" onClick={() => onSetSchools(user)}>
            Change schools <span className="visually-hidden">of {user.username}</span>
          </button>
        )}
        {user.sso ? null : (
          <button type="button" className="button button-small" onClick={() => onSetPassword(user)}>
            Set password <span className="visually-hidden">for {user.username}</span>
          </button>
        )}
        {user.secondFactor ? (
          <ConfirmButton
            question={
              isMe
                ? 'Reset your own second factor? Your password alone then logs you in until you set up a new one.'
                : `Reset the second factor of ${who}? Do this when they lost their phone and recovery codes: they are logged out, log in with their password alone, and set up a new one.`
            }
            confirmLabel="Yes, reset"
            pending={reset.isPending}
            onConfirm={() =>
              reset.mutateAsync(user.id, {
                onSuccess: (saved) =>
                  onChanged(
                    `The second factor of ${saved.username} is reset${isMe ? '' : ' and they were logged out'}.`,
                  ),
              })
            }
          >
            Reset second factor <span className="visually-hidden">of {user.username}</span>
          </ConfirmButton>
        ) : null}
      </div>
      {update.isError ? <ProblemMessage error={update.error} prefix="Not changed" /> : null}
      {reset.isError ? <ProblemMessage error={reset.error} prefix="Not reset" /> : null}
    </>
  );
}

/**
 * How the user logs in: the school's single sign-on — with who they are there (its subject), so
 * that two lookalike usernames are told apart — or a password here (with a second factor or not).
 */
function SignIn({ user }: { user: User }) {
  if (user.sso) {
    return (
      <>
        Single sign-on
        {user.ssoSubject ? (
          <span className="muted sso-subject">
            {' '}
            as <code>{user.ssoSubject}</code>
          </span>
        ) : null}
      </>
    );
  }
  return <>{user.secondFactor ? 'Password + second factor' : 'Password only'}</>;
}
