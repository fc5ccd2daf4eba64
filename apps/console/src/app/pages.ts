import type { Session } from '@school/contract';
import type { QueryClient } from '@tanstack/react-query';
import { type ComponentType, lazy } from 'react';
import type { Params } from 'react-router';
import { prefetchAudit } from '../features/audit/api/prefetch';
import { prefetchBooks } from '../features/books/api/prefetch';
import { prefetchDashboard } from '../features/dashboard/api/prefetch';
import { prefetchDeliveries, prefetchDelivery } from '../features/deliveries/api/prefetch';
import { prefetchCall, prefetchHistory } from '../features/history/api/prefetch';
import { prefetchSchools } from '../features/schools/api/prefetch';
import { prefetchTemplates } from '../features/templates/api/prefetch';
import { prefetchUsers } from '../features/users/api/prefetch';
import { recordId } from '../lib/record-id';
import { isOrganisationAdmin } from '../lib/session';
import { mustSetUpSecondFactor } from './auth-guards';

/** Where a page is opened: its route's params and the address's search (a list's filters). */
export interface Opening {
  readonly params: Readonly<Params>;
  readonly search: URLSearchParams;
}

type Prefetch = (queryClient: QueryClient, at: Opening, session: Session) => void;

/** A page whose code loads on its first visit, and the queries it starts with. */
export interface LazyPage {
  /** The page, for its route: React.lazy over `load`. */
  readonly Page: ComponentType;
  /** Fetches the page's code, once (a failed attempt is tried again next time). */
  load(): Promise<unknown>;
  /** Whether the code has arrived: the page then renders at once and asks for its data itself. */
  readonly loaded: boolean;
  /** Starts the page's first queries, with the keys the page reads: its feature's api/prefetch.ts. */
  readonly prefetch: Prefetch;
}

function lazyPage<M>(
  load: () => Promise<M>,
  component: (module: M) => ComponentType,
  prefetch: Prefetch = () => {},
): LazyPage {
  let loading: Promise<{ default: ComponentType }> | undefined;
  let loaded = false;
  const start = () => {
    loading ??= load().then(
      (module) => {
        loaded = true;
        return { default: component(module) };
      },
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    );
    return loading;
  };
  return {
    Page: lazy(start),
    load: start,
    get loaded() {
      return loaded;
    },
    prefetch,
  };
}

/**
 * A page is being opened (a menu link pressed, a route rendered before its code arrived): its
 * code and its first queries start together, so the data does not wait for the code. Only pages
 * the reader may open get here: the menu lists only theirs (layout.tsx), and a route's page
 * renders only past its guards (router.tsx). Queries already cached or under way are not asked
 * again (React Query's prefetch), so calling this twice for one opening costs nothing.
 */
export function startOpening(page: LazyPage, queryClient: QueryClient, at: Opening, session: Session): void {
  // The queries first: the server's work takes longer than serving a file.
  // Until a second factor is set up the server answers nothing but the Account page's requests.
  if (!mustSetUpSecondFactor(session)) page.prefetch(queryClient, at, session);
  void page.load();
}

/** Managing schools, books, templates and users: admins of every school only (lib/session.ts). */
const isAdmin = (session: Session) => isOrganisationAdmin(session);

/**
 * Every lazily loaded page. The first bundle is the shell (layout, guards, session) and these
 * prefetch functions (small: each feature's query options and URL filters), never a page's
 * components: each page is its own chunk, costing nothing until it is opened, and the landing
 * page (the Dashboard, with uPlot) is the shell plus its own chunk (bench/bundle-size.mjs).
 * Service and Account ask for nothing the shell has not (the service's description, the session),
 * nor does Send but for the schools it offers (those one may send for), which it asks for itself; the login and setup pages are opened logged out, when nothing is prefetched.
 */
export const pages = {
  dashboard: lazyPage(
    () => import('../features/dashboard/components/dashboard-page'),
    (m) => m.DashboardPage,
    (queryClient, { search }, session) => prefetchDashboard(queryClient, search, isAdmin(session)),
  ),
  send: lazyPage(
    () => import('../features/send/components/send-page'),
    (m) => m.SendPage,
  ),
  history: lazyPage(
    () => import('../features/history/components/history-page'),
    (m) => m.HistoryPage,
    (queryClient, { search }) => prefetchHistory(queryClient, search),
  ),
  call: lazyPage(
    () => import('../features/history/components/call-page'),
    (m) => m.CallPage,
    (queryClient, { params }) => {
      const id = recordId(params.id);
      if (id !== undefined) prefetchCall(queryClient, id);
    },
  ),
  deliveries: lazyPage(
    () => import('../features/deliveries/components/deliveries-page'),
    (m) => m.DeliveriesPage,
    (queryClient, { search }) => prefetchDeliveries(queryClient, search),
  ),
  delivery: lazyPage(
    () => import('../features/deliveries/components/delivery-page'),
    (m) => m.DeliveryPage,
    (queryClient, { params }) => {
      const id = recordId(params.id);
      if (id !== undefined) prefetchDelivery(queryClient, id);
    },
  ),
  books: lazyPage(
    () => import('../features/books/components/books-page'),
    (m) => m.BooksPage,
    prefetchBooks,
  ),
  schools: lazyPage(
    () => import('../features/schools/components/schools-page'),
    (m) => m.SchoolsPage,
    prefetchSchools,
  ),
  templates: lazyPage(
    () => import('../features/templates/components/templates-page'),
    (m) => m.TemplatesPage,
    prefetchTemplates,
  ),
  users: lazyPage(
    () => import('../features/users/components/users-page'),
    (m) => m.UsersPage,
    prefetchUsers,
  ),
  audit: lazyPage(
    () => import('../features/audit/components/audit-page'),
    (m) => m.AuditPage,
    (queryClient, { search }, session) => prefetchAudit(queryClient, search, isAdmin(session)),
  ),
  // Asks for nothing as it opens: a report is made when asked for (and audited), never ahead.
  privacy: lazyPage(
    () => import('../features/privacy/components/privacy-page'),
    (m) => m.PrivacyPage,
  ),
  service: lazyPage(
    () => import('../features/service/components/service-page'),
    (m) => m.ServicePage,
  ),
  account: lazyPage(
    () => import('../features/auth/components/account-page'),
    (m) => m.AccountPage,
  ),
  login: lazyPage(
    () => import('../features/auth/components/login-page'),
    (m) => m.LoginPage,
  ),
  setup: lazyPage(
    () => import('../features/auth/components/setup-page'),
    (m) => m.SetupPage,
  ),
} satisfies Record<string, LazyPage>;
