import { loginInputSchema } from '@school/contract';
import { Form, TextField } from '../../../components/ui/form';
import { ProblemError, problemOf } from '../../../lib/api-client';
import { useSetupState } from '../api/get-setup-state';
import { useLogin } from '../api/login';
import { formatWait } from '../utils/wait';
import '../auth.css';

/** Why the login failed, in words a member of staff can act on. */
export function loginFailure(error: unknown): string {
  const problem = problemOf(error);
  if (error instanceof ProblemError) {
    // The server says the same for an unknown user, a wrong password and a disabled account.
    if (error.status === 401) return problem.detail ?? 'Wrong username or password.';
    if (error.status === 429) {
      return error.retryAfter === undefined
        ? 'Too many failed attempts. Wait a while, then try again.'
        : `Too many failed attempts. Try again in ${formatWait(error.retryAfter)}.`;
    }
    if (error.status === 0) return problem.detail ?? 'The server could not be reached.';
  }
  return `Could not log in: ${problem.detail ?? problem.title}${problem.status ? ` (HTTP ${problem.status})` : ''}`;
}

/**
 * /login. Once logged in the app shell leaves this page for the one asked for (`?next=`), see
 * app/auth-guards.tsx.
 */
export function LoginPage() {
  const login = useLogin();
  const setup = useSetupState();

  return (
    <div className="auth-panel">
      <title>Log in · School Messaging</title>
      <h1>Log in</h1>
      {setup.data?.needed ? (
        <div className="status" role="status">
          <p className="status-title">No account exists yet.</p>
          <p>
            To create the first admin, open the setup link the server wrote to its log when it started (it
            ends in <code>/setup?token=…</code> and works for one hour).
          </p>
        </div>
      ) : null}
      <Form
        schema={loginInputSchema}
        options={{ defaultValues: { username: '', password: '' } }}
        aria-label="Log in"
        className="form-plain"
        onSubmit={(values, methods) =>
          login.mutate(values, {
            onError: () => {
              methods.resetField('password');
              methods.setFocus('password');
            },
          })
        }
      >
        {() => (
          <>
            <TextField
              name="username"
              label="Username"
              autoComplete="username"
              autoCapitalize="none"
              spellCheck={false}
            />
            <TextField name="password" label="Password" type="password" autoComplete="current-password" />
            {login.isError ? (
              <p className="status status-error" role="alert">
                {loginFailure(login.error)}
              </p>
            ) : null}
            <div className="actions">
              <button type="submit" className="button button-primary" disabled={login.isPending}>
                {login.isPending ? 'Logging in…' : 'Log in'}
              </button>
            </div>
          </>
        )}
      </Form>
      <p className="muted">Forgot your password? Ask an admin to set a new one.</p>
    </div>
  );
}
