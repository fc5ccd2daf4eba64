import type { Session } from '@school/contract';
import { useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useEffect } from 'react';
import { Navigate, Outlet, useLocation, useSearchParams } from 'react-router';
import { ErrorState, Loading } from '../components/ui/status';
import { paths } from '../config/paths';
import { safeNextPath } from '../lib/next-path';
import { isOrganisationAdmin, sessionEnded, useSession } from '../lib/session';

/** While the session loads: a quiet line, shown only if the wait is noticeable (app/layout.css). */
function SessionLoading() {
  return (
    <div className="session-loading">
      <Loading />
    </div>
  );
}

/**
 * Every page but /login and /setup: rendered only for someone logged in. Anyone else goes to the
 * login page with the address they asked for as `next`, also when a session ends while a page is
 * open (a 401 anywhere sets the session to null, lib/react-query.ts); not after logging out. A
 * user who must set up a second factor first goes to the Account page.
 */
export function RequireSession() {
  const session = useSession();
  const location = useLocation();
  const queryClient = useQueryClient();
  if (session.data === undefined) {
    return session.isError ? (
      <main id="main" className="page">
        <ErrorState
          error={session.error}
          title="Could not check who is logged in"
          onRetry={() => session.refetch()}
        />
      </main>
    ) : (
      <SessionLoading />
    );
  }
  if (session.data === null) {
    const here = `${location.pathname}${location.search}${location.hash}`;
    const back = here !== '/' && sessionEnded(queryClient) !== 'logged-out';
    return <Navigate to={paths.login.href(back ? here : undefined)} replace />;
  }
  if (mustSetUpSecondFactor(session.data) && location.pathname !== paths.account.href()) {
    return <Navigate to={paths.account.href()} replace />;
  }
  return <Outlet />;
}

/** REQUIRE_TOTP: nothing but the Account page answers until a second factor is set up. */
export const mustSetUpSecondFactor = ({ secondFactor }: Session): boolean =>
  secondFactor.required && !secondFactor.enabled;

/**
 * Pages of this origin the server serves itself rather than the console (the API's documentation
 * at /api/docs sends a browser that is not logged in to /login?next=/api/docs): loaded whole.
 */
const servedByTheServer = (path: string): boolean => path.startsWith('/api/');

/** /login and /setup: once logged in, on to `next` (a path of this origin) or the Dashboard. */
export function PublicOnly({ children }: { children: ReactNode }) {
  const session = useSession();
  const [params] = useSearchParams();
  const next = safeNextPath(params.get('next'));
  const leaving = Boolean(session.data) && next !== null && servedByTheServer(next);
  useEffect(() => {
    if (leaving && next) window.location.replace(next);
  }, [leaving, next]);
  if (session.isPending || leaving) return <SessionLoading />;
  if (session.data) return <Navigate to={next ?? paths.dashboard.href()} replace />;
  return children;
}

/**
 * The pages of admins of every school (books, schools, templates, users, privacy): others, and an
 * admin limited to schools, are told so.
 */
export function RequireAdmin() {
  const { data } = useSession();
  if (isOrganisationAdmin(data)) return <Outlet />;
  const limited = data?.user.role === 'admin';
  return (
    <div className="page">
      <title>Not allowed · School Messaging</title>
      <h1>You cannot open this page</h1>
      <div className="status status-error" role="alert">
        <p className="status-title">
          {limited ? 'This page is for admins of every school.' : 'This page is for admins only.'}
        </p>
        <p>
          {limited ? 'Your account is limited to some schools: it' : 'Your account'} can use Send, History,
          Deliveries, Dashboard, Service and the audit of your own actions. If you need more, ask an admin.
        </p>
      </div>
    </div>
  );
}
