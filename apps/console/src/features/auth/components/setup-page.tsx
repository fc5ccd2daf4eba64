import { setupInputSchema } from '@school/contract';
import { Link, useSearchParams } from 'react-router';
import { z } from 'zod';
import { Form, TextField } from '../../../components/ui/form';
import { NewPasswordFields } from '../../../components/ui/password-fields';
import { showFieldErrors } from '../../../components/ui/save-form';
import { ErrorState, Loading, ProblemMessage } from '../../../components/ui/status';
import { paths } from '../../../config/paths';
import { ProblemError } from '../../../lib/api-client';
import { samePasswords } from '../../../lib/passwords';
import { useSetupState } from '../api/get-setup-state';
import { useSetup } from '../api/setup';
import '../auth.css';

const setupFormSchema = setupInputSchema
  .omit({ token: true })
  .extend({ confirm: z.string() })
  .refine(...samePasswords('password', 'confirm'));

const FIELDS = ['username', 'displayName', 'password'] as const;

/**
 * /setup?token=…: the first admin, made with the one-time token the server wrote to its log when
 * it started with no user. Once made, they are logged in and the app shell leaves this page.
 */
export function SetupPage() {
  const [params] = useSearchParams();
  const token = params.get('token') ?? '';
  const state = useSetupState();

  return (
    <div className="auth-panel">
      <title>Set up · School Messaging</title>
      <h1>Set up the console</h1>
      {state.isPending ? (
        <Loading />
      ) : state.isError ? (
        <ErrorState error={state.error} title="Could not check the setup" onRetry={() => state.refetch()} />
      ) : !state.data.needed ? (
        <>
          <p>The console is set up already: staff accounts exist.</p>
          <p>
            <Link to={paths.login.href()}>Go to the login page</Link>
          </p>
        </>
      ) : !token ? (
        <div className="status" role="status">
          <p className="status-title">This page needs the setup link.</p>
          <p>
            When the server starts with no account, it writes a one-time link to its log, ending in{' '}
            <code>/setup?token=…</code>. Open that link (it works for one hour; restart the server for a new
            one).
          </p>
        </div>
      ) : (
        <SetupForm token={token} />
      )}
    </div>
  );
}

function SetupForm({ token }: { token: string }) {
  const setup = useSetup();
  const status = setup.error instanceof ProblemError ? setup.error.status : undefined;

  return (
    <>
      <p>Create the first admin account. Admins can do everything, including adding other staff.</p>
      <Form
        schema={setupFormSchema}
        options={{ defaultValues: { username: '', displayName: '', password: '', confirm: '' } }}
        aria-label="Create the first admin"
        className="form-plain"
        onSubmit={({ confirm: _confirm, ...values }, methods) =>
          setup.mutate({ token, ...values }, { onError: (error) => showFieldErrors(error, FIELDS, methods) })
        }
      >
        {() => (
          <>
            <TextField
              name="username"
              label="Username"
              description="What you type to log in: 2 to 64 letters, digits, dots, dashes, underscores or @."
              autoComplete="username"
              autoCapitalize="none"
              spellCheck={false}
            />
            <TextField
              name="displayName"
              label="Display name"
              description="Your name as others see it, e.g. in the audit log."
              autoComplete="name"
            />
            <NewPasswordFields label="Password" confirmLabel="Confirm password" />
            {status === 403 ? (
              <div className="status status-error" role="alert">
                <p className="status-title">This setup link is wrong or has expired.</p>
                <p>
                  A link works for one hour after the server starts. Restart the server to have it write a new
                  one to its log.
                </p>
              </div>
            ) : status === 409 ? (
              <div className="status status-error" role="alert">
                <p className="status-title">The console is set up already: an account exists.</p>
                <p>
                  <Link to={paths.login.href()}>Log in instead</Link>
                </p>
              </div>
            ) : setup.isError ? (
              <ProblemMessage error={setup.error} prefix="Not created" />
            ) : null}
            <div className="actions">
              <button type="submit" className="button button-primary" disabled={setup.isPending}>
                {setup.isPending ? 'Creating…' : 'Create admin and log in'}
              </button>
            </div>
          </>
        )}
      </Form>
    </>
  );
}
