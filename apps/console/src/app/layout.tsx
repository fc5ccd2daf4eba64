import { NavLink, Outlet } from 'react-router';
import { paths } from '../config/paths';
import { UserMenu } from '../features/auth/components/user-menu';
import { useSession } from '../lib/session';

const links = [
  { to: paths.send.href(), label: 'Send', adminOnly: false },
  { to: paths.history.href(), label: 'History', adminOnly: false },
  { to: paths.deliveries.href(), label: 'Deliveries', adminOnly: false },
  { to: paths.dashboard.href(), label: 'Dashboard', adminOnly: false },
  { to: paths.books.href(), label: 'Books', adminOnly: true },
  { to: paths.schools.href(), label: 'Schools', adminOnly: true },
  { to: paths.templates.href(), label: 'Templates', adminOnly: true },
  { to: paths.users.href(), label: 'Users', adminOnly: true },
  { to: paths.audit.href(), label: 'Audit', adminOnly: true },
  { to: paths.service.href(), label: 'Service', adminOnly: false },
] as const;

/** The pages of someone logged in: the header (navigation for their role, their menu) and the page. */
export function Layout() {
  const isAdmin = useSession().data?.user.role === 'admin';
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="app-header">
        <p className="app-name">School Messaging</p>
        <nav aria-label="Main">
          <ul className="nav-list">
            {links
              .filter((link) => isAdmin || !link.adminOnly)
              .map((link) => (
                <li key={link.to}>
                  <NavLink to={link.to} className="nav-link">
                    {link.label}
                  </NavLink>
                </li>
              ))}
          </ul>
        </nav>
        <UserMenu />
      </header>
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </>
  );
}

/** The login and setup pages: the console's name and one panel, no navigation. */
export function PublicLayout() {
  return (
    <main id="main" className="public-main">
      <p className="app-name">School Messaging</p>
      <Outlet />
    </main>
  );
}
