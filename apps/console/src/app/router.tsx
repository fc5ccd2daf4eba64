import { groups } from '@school/contract';
import { useQueryClient } from '@tanstack/react-query';
import { Component, type ErrorInfo, type ReactNode } from 'react';
import { Navigate, Route, Routes, useLocation, useParams } from 'react-router';
import { paths } from '../config/paths';
import { useSession } from '../lib/session';
import { PublicOnly, RequireAdmin, RequireSession } from './auth-guards';
import { Layout, PageLoading, PublicLayout } from './layout';
import { type LazyPage, pages, startOpening } from './pages';

/** Where /send goes: the contract's first operation. */
const firstOperation = groups[0]?.operations[0]?.name;

// Every page loads on its first visit (pages.ts says what is in the first bundle). Declarative
// routes rather than a data router: this mode is about 17 KB gzipped smaller, and the one thing
// its loaders would do here, start a page's queries as it is opened rather than once its code has
// arrived, pages.ts does beside each lazy import.
export function AppRoutes() {
  return (
    <Routes>
      {/* Logged out, only these two render; everything else goes to the login page (auth-guards.tsx). */}
      <Route element={<PublicLayout />}>
        <Route
          path={paths.login.pattern}
          element={
            <PublicOnly>
              <Page page={pages.login} />
            </PublicOnly>
          }
        />
        <Route
          path={paths.setup.pattern}
          element={
            <PublicOnly>
              <Page page={pages.setup} />
            </PublicOnly>
          }
        />
      </Route>
      <Route element={<RequireSession />}>
        <Route element={<Layout />}>
          <Route index element={<Redirect to={paths.dashboard.href()} />} />
          {/* /send opens the first operation. Here rather than in the page: a page that navigates as it
              mounts can undo a click made while its code was loading (layout.tsx, PageFrame). */}
          <Route path={paths.send.href()} element={<Redirect to={paths.send.href(firstOperation)} />} />
          <Route path={paths.send.pattern} element={<Page page={pages.send} />} />
          <Route path={paths.history.pattern} element={<Page page={pages.history} />} />
          <Route path={paths.call.pattern} element={<Page page={pages.call} />} />
          <Route path={paths.deliveries.pattern} element={<Page page={pages.deliveries} />} />
          <Route path={paths.delivery.pattern} element={<Page page={pages.delivery} />} />
          <Route path={paths.dashboard.pattern} element={<Page page={pages.dashboard} />} />
          <Route path={paths.service.pattern} element={<Page page={pages.service} />} />
          <Route path={paths.account.pattern} element={<Page page={pages.account} />} />
          {/* Everyone's for admins of every school, one's own for anyone else. */}
          <Route path={paths.audit.pattern} element={<Page page={pages.audit} />} />
          <Route element={<RequireAdmin />}>
            <Route path={paths.books.pattern} element={<Page page={pages.books} />} />
            <Route path={paths.schools.pattern} element={<Page page={pages.schools} />} />
            <Route path={paths.templates.pattern} element={<Page page={pages.templates} />} />
            <Route path={paths.users.pattern} element={<Page page={pages.users} />} />
            <Route path={paths.privacy.pattern} element={<Page page={pages.privacy} />} />
          </Route>
          <Route path="*" element={<NotFound />} />
        </Route>
      </Route>
    </Routes>
  );
}

/**
 * A route that sends the reader on, saying meanwhile that the page is loading: the layout's frame
 * keeps what this renders on screen until the next page's code is there (layout.tsx).
 */
function Redirect({ to }: { to: string }) {
  return (
    <>
      <Navigate to={to} replace />
      <PageLoading />
    </>
  );
}

/**
 * A lazily loaded page (the layout's frame shows a loading message while the first page's code
 * arrives, layout.tsx), or an error if its code cannot be loaded.
 */
function Page({ page }: { page: LazyPage }) {
  const location = useLocation();
  const params = useParams();
  const queryClient = useQueryClient();
  const session = useSession().data;
  // Opened before its code has arrived (a link in a page, Back, an address typed): its first
  // queries start now, beside the code, not once it has rendered. In render, as React Query's
  // usePrefetchQuery does, since a navigation has no earlier moment here; what is cached or under
  // way is not asked again. Once the code is there the page renders at once and asks itself.
  if (!page.loaded && session) {
    startOpening(page, queryClient, { params, search: new URLSearchParams(location.search) }, session);
  }
  return (
    <PageErrorBoundary key={location.pathname}>
      <page.Page />
    </PageErrorBoundary>
  );
}

class PageErrorBoundary extends Component<{ children: ReactNode }, { error: Error | null }> {
  override state = { error: null as Error | null };

  static getDerivedStateFromError(error: Error) {
    return { error };
  }

  override componentDidCatch(error: Error, info: ErrorInfo) {
    console.error(error, info.componentStack);
  }

  override render() {
    if (!this.state.error) return this.props.children;
    return (
      <div className="page">
        <h1>This page could not be shown</h1>
        <div className="status status-error" role="alert">
          <p>{this.state.error.message}</p>
          <p>Reloading may help (a new version of the console may have been deployed).</p>
        </div>
        <p>
          <button type="button" className="button" onClick={() => window.location.reload()}>
            Reload
          </button>
        </p>
      </div>
    );
  }
}

function NotFound() {
  return (
    <div className="page">
      <title>Not found · School Messaging</title>
      <h1>Page not found</h1>
      <p>There is no page at this address.</p>
    </div>
  );
}
