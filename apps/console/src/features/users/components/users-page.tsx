import type { User } from '@school/contract';
import { useState } from 'react';
import { Link } from 'react-router';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { paths } from '../../../config/paths';
import { ROLE_NAMES } from '../../../lib/format';
import { useSchools } from '../../../lib/schools';
import { useSession } from '../../../lib/session';
import { useUsers } from '../../../lib/users';
import { PasswordForm } from './password-form';
import { schoolNames } from './school-picker';
import { SchoolsForm } from './schools-form';
import { UserForm } from './user-form';
import { UsersTable } from './users-table';
import '../users.css';

export function UsersPage() {
  const users = useUsers();
  const schools = useSchools();
  const me = useSession().data?.user.id;
  const [settingPassword, setSettingPassword] = useState<User | null>(null);
  const [settingSchools, setSettingSchools] = useState<User | null>(null);
  const [message, setMessage] = useState('');

  return (
    <div className="page users-page">
      <title>Users · School Messaging</title>
      <h1>Users</h1>
      <p className="hint">
        The staff who can log in to this console. Admins can do everything; operators can send, and see the
        history, deliveries, dashboard and service. A user limited to schools sees and sends for those schools
        only, and manages nothing, whatever their role. Your own password and second factor:{' '}
        <Link to={paths.account.href()}>Account and security</Link>.
      </p>

      {users.isPending ? (
        <Loading>Loading users…</Loading>
      ) : users.isError ? (
        <ErrorState error={users.error} title="Could not load the users" onRetry={() => users.refetch()} />
      ) : users.data.items.length === 0 ? (
        <EmptyState>No users yet.</EmptyState>
      ) : (
        <UsersTable
          users={users.data.items}
          schools={schools.data}
          me={me}
          onChanged={setMessage}
          onSetPassword={(user) => {
            setMessage('');
            setSettingSchools(null);
            setSettingPassword(user);
          }}
          onSetSchools={(user) => {
            setMessage('');
            setSettingPassword(null);
            setSettingSchools(user);
          }}
        />
      )}
      <p role="status" className="page-status">
        {message}
      </p>

      {settingPassword ? (
        <PasswordForm
          key={settingPassword.id}
          user={settingPassword}
          onCancel={() => setSettingPassword(null)}
          onDone={(user) => {
            setSettingPassword(null);
            setMessage(`New password set for ${user.username}. They were logged out and log in with it now.`);
          }}
        />
      ) : null}
      {settingSchools ? (
        <SchoolsForm
          key={settingSchools.id}
          user={settingSchools}
          onCancel={() => setSettingSchools(null)}
          onDone={(user) => {
            setSettingSchools(null);
            setMessage(
              user.schoolIds === null
                ? `${user.username} sees every school.`
                : `${user.username} is limited to ${schoolNames(user.schoolIds, schools.data)}.`,
            );
          }}
        />
      ) : null}
      <UserForm
        onSaving={() => setMessage('')}
        onSaved={(user) =>
          setMessage(
            `Added ${user.username} (${ROLE_NAMES[user.role]}, ${schoolNames(user.schoolIds, schools.data)}).`,
          )
        }
      />
    </div>
  );
}
