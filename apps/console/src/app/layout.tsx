import { useQueryClient } from '@tanstack/react-query';
import { Suspense, useEffect, useRef, useState } from 'react';
import { Link, NavLink, Outlet, useLocation } from 'react-router';
import { Loading } from '../components/ui/status';
import { paths } from '../config/paths';
import { UserMenu } from '../features/auth/components/user-menu';
import { useServiceInfo } from '../lib/service-info';
import { isOrganisationAdmin, useSession } from '../lib/session';
import { pages, startOpening } from './pages';

const links = [
  { to: paths.dashboard.href(), label: 'Dashboard', adminOnly: false, page: pages.dashboard },
  { to: paths.send.href(), label: 'Send', adminOnly: false, page: pages.send },
  { to: paths.history.href(), label: 'History', adminOnly: false, page: pages.history },
  { to: paths.deliveries.href(), label: 'Deliveries', adminOnly: false, page: pages.deliveries },
  { to: paths.books.href(), label: 'Books', adminOnly: true, page: pages.books },
  { to: paths.schools.href(), label: 'Schools', adminOnly: true, page: pages.schools },
  { to: paths.templates.href(), label: 'Templates', adminOnly: true, page: pages.templates },
  { to: paths.users.href(), label: 'Users', adminOnly: true, page: pages.users },
  { to: paths.audit.href(), label: 'Audit', adminOnly: false, page: pages.audit },
  { to: paths.privacy.href(), label: 'Privacy', adminOnly: true, page: pages.privacy },
  { to: paths.service.href(), label: 'Service', adminOnly: false, page: pages.service },
] as const;

/** The pages of someone logged in: the header (navigation for their role, their menu) and the page. */
export function Layout() {
  const session = useSession().data;
  // Managing schools, books, templates, users and privacy requests: admins of every school only.
  const isAdmin = isOrganisationAdmin(session);
  const { pathname } = useLocation();
  const queryClient = useQueryClient();
  // On a phone the links fold behind one button, which names the page you are on; a new page,
  // Escape or focus leaving the menu closes it.
  const [menuOpen, setMenuOpen] = useState(false);
  const toggleRef = useRef<HTMLButtonElement>(null);
  useEffect(() => setMenuOpen(false), [pathname]);
  useHeadingFocusOnNavigation(pathname);
  // The page a menu link opens, until it is shown: the previous page stays while the new one's
  // code arrives (see PageFrame), and the link says it is on its way.
  const [opening, setOpening] = useState<string | null>(null);
  useEffect(() => setOpening(null), [pathname]);
  const busy = opening !== null && opening !== pathname;
  const shown = links.filter((link) => isAdmin || !link.adminOnly);
  const current = shown.find((link) => pathname === link.to || pathname.startsWith(`${link.to}/`));
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="app-header">
        <p className="app-name">School Messaging</p>
        <nav
          aria-label="Main"
          onKeyDown={(event) => {
            if (event.key !== 'Escape' || !menuOpen) return;
            setMenuOpen(false);
            toggleRef.current?.focus();
          }}
          onBlur={(event) => {
            if (menuOpen && !event.currentTarget.contains(event.relatedTarget as Node | null))
              setMenuOpen(false);
          }}
        >
          <button
            ref={toggleRef}
            type="button"
            className="menu-toggle"
            aria-expanded={menuOpen}
            aria-controls="main-links"
            onClick={() => setMenuOpen((open) => !open)}
          >
            <span aria-hidden="true">☰</span>
            <span>
              Menu{current ? ': ' : ''}
              {current ? <span className="menu-toggle-current">{current.label}</span> : null}
            </span>
          </button>
          <ul id="main-links" className={menuOpen ? 'nav-list nav-list-open' : 'nav-list'}>
            {shown.map((link) => (
              <li key={link.to}>
                <NavLink
                  to={link.to}
                  className={busy && opening === link.to ? 'nav-link nav-link-opening' : 'nav-link'}
                  // A page is fetched as the pointer comes to its link or the focus lands on it,
                  // and pressing it starts its data too, before the click that opens it (the
                  // press lasts a tenth of a second or so). Not the page already shown.
                  onPointerEnter={() => void link.page.load()}
                  onFocus={() => void link.page.load()}
                  onPointerDown={(event) => {
                    if (event.button !== 0 || !session || pathname === link.to) return;
                    startOpening(
                      link.page,
                      queryClient,
                      { params: {}, search: new URLSearchParams() },
                      session,
                    );
                  }}
                  onClick={(event) => {
                    // A click the browser handles itself (a new tab or window) opens nothing here;
                    // a page whose code is there is shown at once, with nothing to wait for.
                    const modified = event.metaKey || event.ctrlKey || event.shiftKey || event.altKey;
                    if (event.button === 0 && !modified && !link.page.loaded) setOpening(link.to);
                  }}
                >
                  {link.label}
                </NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <UserMenu />
      </header>
      <TestModeBanner />
      <main id="main" tabIndex={-1} aria-busy={busy || undefined}>
        <PageFrame />
      </main>
    </>
  );
}

/**
 * Where the pages go: one Suspense boundary for all of them, which stays as the reader moves from
 * page to page. The router moves in a transition, so while a page's code is still on its way React
 * keeps the previous page rather than showing this fallback again, and shows the new page as soon
 * as its code is there (its data asked for as it was opened: pages.ts). A boundary of each page's
 * own would be new at each visit: its fallback would show, and React holds what replaces a
 * fallback until 300 ms after it appeared, whatever arrives sooner. The fallback shows on the
 * first page of a visit (and after logging in), while the first page's code arrives. A link
 * followed meanwhile waits for its own page's code, and the first page is still shown (briefly)
 * when its code arrives: so no page navigates as it mounts (a redirect is a route of its own,
 * router.tsx), or it would undo that click.
 */
function PageFrame() {
  return (
    <Suspense fallback={<PageLoading />}>
      <Outlet />
    </Suspense>
  );
}

/** While a page's code arrives. */
export const PageLoading = () => <Loading>Loading the page…</Loading>;

/**
 * After a navigation (not the first page) focus goes to the new page's heading, as a screen reader
 * or keyboard user expects: not left on the link they chose, sixteen Tabs away from the page. A
 * page's code loads lazily, so its heading is waited for (up to 3 s); focus someone has already
 * moved into the page is not taken away.
 */
function useHeadingFocusOnNavigation(pathname: string): void {
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    void pathname;
    const main = document.getElementById('main');
    if (!main) return;
    const focusHeading = (): boolean => {
      const heading = main.querySelector('h1');
      if (!heading) return false;
      const active = document.activeElement;
      if (active && active !== document.body && main.contains(active)) return true;
      if (!heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1');
      heading.focus();
      return true;
    };
    if (focusHeading()) return;
    const observer = new MutationObserver(() => {
      if (focusHeading()) observer.disconnect();
    });
    observer.observe(main, { childList: true, subtree: true });
    const timer = setTimeout(() => observer.disconnect(), 3000);
    return () => {
      observer.disconnect();
      clearTimeout(timer);
    };
  }, [pathname]);
}

/**
 * On every page while a provider is `log`: nothing is really sent, however healthy the counts
 * look. (The Service page says which setting sends for real.) On a narrow screen the band says it
 * in a few words, on one line, so that it does not push every page down; a screen reader hears the
 * whole sentence at any width (the short words are hidden from it).
 */
function TestModeBanner() {
  const providers = useServiceInfo().data?.providers;
  if (!providers) return null;
  const sms = providers.sms.name === 'log';
  const push = providers.push.name === 'log';
  if (!sms && !push) return null;
  const what = sms && push ? 'SMS and push notifications are' : sms ? 'SMS are' : 'Push notifications are';
  const short = sms && push ? 'SMS and push' : sms ? 'SMS' : 'push';
  return (
    <aside className="test-mode" aria-label="Test mode">
      <p>
        <strong>Test mode:</strong>{' '}
        <span className="test-mode-long">{what} only written to the server’s log, nothing is sent.</span>
        <span className="test-mode-short" aria-hidden="true">
          {short} not sent.
        </span>{' '}
        <Link to={paths.service.href()}>
          <span className="test-mode-long">How to send for real</span>
          <span className="test-mode-short" aria-hidden="true">
            Send for real
          </span>
        </Link>
      </p>
    </aside>
  );
}

/** The login and setup pages: the console's name and one panel, no navigation. */
export function PublicLayout() {
  return (
    <main id="main" className="public-main">
      <p className="app-name">School Messaging</p>
      <PageFrame />
    </main>
  );
}
