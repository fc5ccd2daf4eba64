import { Component, type ErrorInfo, lazy, type ReactNode, Suspense } from 'react';
import { Navigate, Route, Routes, useLocation } from 'react-router';
import { Loading } from '../components/ui/status';
import { paths } from '../config/paths';
import { PublicOnly, RequireAdmin, RequireSession } from './auth-guards';
import { Layout, PublicLayout } from './layout';

// The first bundle is the shell (layout, guards, session); every page loads on its first visit,
// so a page costs nothing until it is opened, and the landing page (the Dashboard, with uPlot) is
// the shell plus its own chunk (bench/bundle-size.mjs). Declarative routes rather than a data
// router: the console has no loaders or actions, and this mode is about 17 KB gzipped smaller.
const SendPage = lazy(() =>
  import('../features/send/components/send-page').then((m) => ({ default: m.SendPage })),
);
const HistoryPage = lazy(() =>
  import('../features/history/components/history-page').then((m) => ({ default: m.HistoryPage })),
);
const CallPage = lazy(() =>
  import('../features/history/components/call-page').then((m) => ({ default: m.CallPage })),
);
const DashboardPage = lazy(() =>
  import('../features/dashboard/components/dashboard-page').then((m) => ({ default: m.DashboardPage })),
);
const DeliveriesPage = lazy(() =>
  import('../features/deliveries/components/deliveries-page').then((m) => ({ default: m.DeliveriesPage })),
);
const DeliveryPage = lazy(() =>
  import('../features/deliveries/components/delivery-page').then((m) => ({ default: m.DeliveryPage })),
);
const BooksPage = lazy(() =>
  import('../features/books/components/books-page').then((m) => ({ default: m.BooksPage })),
);
const SchoolsPage = lazy(() =>
  import('../features/schools/components/schools-page').then((m) => ({ default: m.SchoolsPage })),
);
const TemplatesPage = lazy(() =>
  import('../features/templates/components/templates-page').then((m) => ({ default: m.TemplatesPage })),
);
const ServicePage = lazy(() =>
  import('../features/service/components/service-page').then((m) => ({ default: m.ServicePage })),
);
const LoginPage = lazy(() =>
  import('../features/auth/components/login-page').then((m) => ({ default: m.LoginPage })),
);
const SetupPage = lazy(() =>
  import('../features/auth/components/setup-page').then((m) => ({ default: m.SetupPage })),
);
const AccountPage = lazy(() =>
  import('../features/auth/components/account-page').then((m) => ({ default: m.AccountPage })),
);
const UsersPage = lazy(() =>
  import('../features/users/components/users-page').then((m) => ({ default: m.UsersPage })),
);
const AuditPage = lazy(() =>
  import('../features/audit/components/audit-page').then((m) => ({ default: m.AuditPage })),
);

export function AppRoutes() {
  return (
    <Routes>
      {/* Logged out, only these two render; everything else goes to the login page (auth-guards.tsx). */}
      <Route element={<PublicLayout />}>
        <Route
          path={paths.login.pattern}
          element={
            <PublicOnly>
              <Page>{<LoginPage />}</Page>
            </PublicOnly>
          }
        />
        <Route
          path={paths.setup.pattern}
          element={
            <PublicOnly>
              <Page>{<SetupPage />}</Page>
            </PublicOnly>
          }
        />
      </Route>
      <Route element={<RequireSession />}>
        <Route element={<Layout />}>
          <Route index element={<Navigate to={paths.dashboard.href()} replace />} />
          <Route path={paths.send.pattern} element={<Page>{<SendPage />}</Page>} />
          <Route path={paths.history.pattern} element={<Page>{<HistoryPage />}</Page>} />
          <Route path={paths.call.pattern} element={<Page>{<CallPage />}</Page>} />
          <Route path={paths.deliveries.pattern} element={<Page>{<DeliveriesPage />}</Page>} />
          <Route path={paths.delivery.pattern} element={<Page>{<DeliveryPage />}</Page>} />
          <Route path={paths.dashboard.pattern} element={<Page>{<DashboardPage />}</Page>} />
          <Route path={paths.service.pattern} element={<Page>{<ServicePage />}</Page>} />
          <Route path={paths.account.pattern} element={<Page>{<AccountPage />}</Page>} />
          <Route element={<RequireAdmin />}>
            <Route path={paths.books.pattern} element={<Page>{<BooksPage />}</Page>} />
            <Route path={paths.schools.pattern} element={<Page>{<SchoolsPage />}</Page>} />
            <Route path={paths.templates.pattern} element={<Page>{<TemplatesPage />}</Page>} />
            <Route path={paths.users.pattern} element={<Page>{<UsersPage />}</Page>} />
            <Route path={paths.audit.pattern} element={<Page>{<AuditPage />}</Page>} />
          </Route>
          <Route path="*" element={<NotFound />} />
        </Route>
      </Route>
    </Routes>
  );
}

/** A lazily loaded page: a loading message while its code arrives, an error if it cannot. */
function Page({ children }: { children: ReactNode }) {
  const location = useLocation();
  return (
    <PageErrorBoundary key={location.pathname}>
      <Suspense fallback={<Loading>Loading the page…</Loading>}>{children}</Suspense>
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
