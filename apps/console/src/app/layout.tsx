import { NavLink, Outlet } from 'react-router';
import { paths } from '../config/paths';

const links = [
  { to: paths.send.href(), label: 'Send' },
  { to: paths.history.href(), label: 'History' },
  { to: paths.deliveries.href(), label: 'Deliveries' },
  { to: paths.dashboard.href(), label: 'Dashboard' },
  { to: paths.books.href(), label: 'Books' },
  { to: paths.schools.href(), label: 'Schools' },
  { to: paths.templates.href(), label: 'Templates' },
  { to: paths.service.href(), label: 'Service' },
] as const;

export function Layout() {
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="app-header">
        <p className="app-name">School Messaging</p>
        <nav aria-label="Main">
          <ul className="nav-list">
            {links.map((link) => (
              <li key={link.to}>
                <NavLink to={link.to} className="nav-link">
                  {link.label}
                </NavLink>
              </li>
            ))}
          </ul>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </>
  );
}
