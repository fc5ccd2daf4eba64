import { type LoginInput, loginInputSchema, SSO_OUTCOMES, type SsoOutcome } from '@school/contract';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { z } from 'zod';
import { Form, TextField } from '../../../components/ui/form';
import { CurrentPasswordField } from '../../../components/ui/password-fields';
import { ProblemError, problemOf } from '../../../lib/api-client';
import { safeNextPath } from '../../../lib/next-path';
import { sessionEnded } from '../../../lib/session';
import { singleSignOnHref, useLoginOptions } from '../api/get-login-options';
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
    if (error.status === 403) return problem.detail ?? 'Password logins are turned off here.';
    if (error.status === 429) {
      return error.retryAfter === undefined
        ? 'Too many failed attempts. Wait a while, then try again.'
        : `Too many failed attempts. Try again in ${formatWait(error.retryAfter)}.`;
    }
    if (error.status === 0) return problem.detail ?? 'The server could not be reached.';
  }
  return `Could not log in: ${problem.detail ?? problem.title}${problem.status ? ` (HTTP ${problem.status})` : ''}`;
}

/** The password was right; the second factor's code is asked for next. */
const asksForCode = (error: unknown): boolean =>
  error instanceof ProblemError && error.status === 401 && error.problem.secondFactorRequired === true;

const codeSchema = z.object({
  code: z.string().trim().min(1, 'Enter the code from your authenticator app, or a recovery code.').max(32),
});

/** After a refused attempt: the secret typed (password or code) is cleared and focused, to type again. */
function typeAgain<N extends string>(
  methods: { resetField: (name: N) => void; setFocus: (name: N) => void },
  name: N,
): void {
  methods.resetField(name);
  methods.setFocus(name);
}

/** Why the last attempt failed (either form's), as an alert. */
function LoginFailureAlert({ login }: { login: { isError: boolean; error: unknown } }) {
  return login.isError ? (
    <p className="status status-error" role="alert">
      {loginFailure(login.error)}
    </p>
  ) : null;
}

const isOutcome = (value: string | null): value is SsoOutcome =>
  value !== null && Object.hasOwn(SSO_OUTCOMES, value);

/**
 * /login: the school's single sign-on (when set up) above the username and password form; for a
 * user with a second factor, then the code. Once logged in the app shell leaves this page for the
 * one asked for (`?next=`), see app/auth-guards.tsx.
 */
export function LoginPage() {
  const login = useLogin();
  const setup = useSetupState();
  const options = useLoginOptions();
  const [params] = useSearchParams();
  const next = safeNextPath(params.get('next'));
  const outcome = params.get('sso');
  // The username and password that were right, while the code is asked for.
  const [credentials, setCredentials] = useState<LoginInput | null>(null);
  const sso = options.data?.sso ?? null;
  const localLogin = options.data?.localLogin !== false;
  // Sent here by a request refused for an expired session (not by logging out).
  const expired = sessionEnded(useQueryClient()) === 'expired' && next !== null;

  if (credentials) {
    return (
      <div className="auth-panel">
        <title>Log in · School Messaging</title>
        <h1>Log in</h1>
        <p>Open your authenticator app and enter the code it shows for this console.</p>
        <Form
          schema={codeSchema}
          options={{ defaultValues: { code: '' } }}
          aria-label="Second factor"
          className="form-plain"
          onSubmit={({ code }, methods) =>
            login.mutate({ ...credentials, code }, { onError: () => typeAgain(methods, 'code') })
          }
        >
          {() => (
            <>
              <TextField
                name="code"
                label="Code"
                description="The 6 digits from the app, or one of your recovery codes."
                autoComplete="one-time-code"
                autoCapitalize="none"
                spellCheck={false}
                autoFocus
              />
              <LoginFailureAlert login={login} />
              <div className="actions">
                <button type="submit" className="button button-primary" disabled={login.isPending}>
                  {login.isPending ? 'Checking…' : 'Log in'}
                </button>
                <button
                  type="button"
                  className="button"
                  onClick={() => {
                    login.reset();
                    setCredentials(null);
                  }}
                >
                  Back
                </button>
              </div>
            </>
          )}
        </Form>
        <p className="muted">
          Lost your phone and your recovery codes? Ask an admin to reset your second factor.
        </p>
      </div>
    );
  }

  return (
    <div className="auth-panel">
      <title>Log in · School Messaging</title>
      <h1>Log in</h1>
      {expired && !isOutcome(outcome) ? (
        <div className="status" role="status">
          <p className="status-title">Your session ended; log in to go on.</p>
          <p>You will be back on the page you were on.</p>
        </div>
      ) : null}
      {isOutcome(outcome) ? (
        <div className="status status-error" role="alert">
          <p>{SSO_OUTCOMES[outcome]}</p>
        </div>
      ) : null}
      {setup.data?.needed && localLogin ? (
        <div className="status" role="status">
          <p className="status-title">No account exists yet.</p>
          <p>
            To create the first admin, open the setup link the server wrote to its log when it started (it
            ends in <code>/setup?token=…</code> and works for one hour).
          </p>
        </div>
      ) : null}
      {sso ? (
        <div className="sso">
          <a className="button button-primary" href={singleSignOnHref(next)}>
            Log in with {sso.label}
          </a>
          {localLogin ? <p className="sso-or">or with a username and password</p> : null}
        </div>
      ) : null}
      {localLogin ? (
        <Form
          schema={loginInputSchema}
          options={{ defaultValues: { username: '', password: '' } }}
          aria-label="Log in"
          className="form-plain"
          onSubmit={(values, methods) =>
            login.mutate(values, {
              onError: (error) => {
                if (asksForCode(error)) {
                  login.reset();
                  setCredentials(values);
                  return;
                }
                typeAgain(methods, 'password');
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
                autoFocus
              />
              <CurrentPasswordField label="Password" />
              <LoginFailureAlert login={login} />
              <div className="actions">
                <button
                  type="submit"
                  className={sso ? 'button' : 'button button-primary'}
                  disabled={login.isPending}
                >
                  {login.isPending ? 'Logging in…' : 'Log in'}
                </button>
              </div>
            </>
          )}
        </Form>
      ) : null}
      {localLogin ? <p className="muted">Forgot your password? Ask an admin to set a new one.</p> : null}
    </div>
  );
}
