import { CSRF_HEADER } from '@school/contract';
import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { afterEach, describe, expect, it } from 'vitest';
import { setTimeZoneSetting } from '../lib/time-zone';
import { operatorSession, problem, serviceInfo, session, staffUser } from '../testing/data';
import { renderApp } from '../testing/render';
import { problemJson, recordRequests, server } from '../testing/server';

const navLinks = () =>
  within(screen.getByRole('navigation', { name: 'Main' }))
    .getAllByRole('link')
    .map((a) => a.textContent);

describe('The header', () => {
  it('shows an admin every page', async () => {
    renderApp('/service');
    await screen.findByRole('heading', { name: 'Service', level: 1 });
    expect(navLinks()).toEqual([
      'Dashboard',
      'Send',
      'History',
      'Deliveries',
      'Books',
      'Schools',
      'Templates',
      'Users',
      'Audit',
      'Privacy',
      'Service',
    ]);
  });

  it('shows an operator only the pages an operator may use', async () => {
    server.use(http.get('/api/session', () => HttpResponse.json(operatorSession())));
    renderApp('/service');
    await screen.findByRole('heading', { name: 'Service', level: 1 });
    // Audit: the entries of their own actions.
    expect(navLinks()).toEqual(['Dashboard', 'Send', 'History', 'Deliveries', 'Audit', 'Service']);
  });

  it('shows an admin limited to schools what an operator sees, and tells them why the rest is not theirs', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/session', () => HttpResponse.json(session({ schoolIds: [1] }))));
    const view = renderApp('/service');
    await screen.findByRole('heading', { name: 'Service', level: 1 });
    expect(navLinks()).toEqual(['Dashboard', 'Send', 'History', 'Deliveries', 'Audit', 'Service']);
    view.unmount();
    for (const path of ['/users', '/privacy', '/books', '/schools', '/templates']) {
      const page = renderApp(path);
      expect(await screen.findByRole('heading', { name: 'You cannot open this page' })).toBeInTheDocument();
      expect(screen.getByRole('alert')).toHaveTextContent('This page is for admins of every school.');
      expect(screen.getByRole('alert')).toHaveTextContent('Your account is limited to some schools');
      page.unmount();
    }
    // Nothing asked that the server would refuse them.
    expect(
      requests.map((r) => new URL(r.url).pathname).filter((p) => p === '/api/schools' || p === '/api/users'),
    ).toEqual([]);
  });

  it('tells an operator who opens an admin page that it is not for them, without asking the API', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/session', () => HttpResponse.json(operatorSession())));
    for (const path of ['/users', '/privacy', '/books', '/schools', '/templates']) {
      const view = renderApp(path);
      expect(await screen.findByRole('heading', { name: 'You cannot open this page' })).toBeInTheDocument();
      expect(screen.getByRole('alert')).toHaveTextContent('This page is for admins only.');
      view.unmount();
    }
    // Only the shell's own: who is logged in, and whether the providers only log (the banner).
    expect(
      requests
        .map((r) => new URL(r.url).pathname)
        .filter((p) => p !== '/api/session' && p !== '/api/service'),
    ).toEqual([]);
  });

  it('says on every page that nothing is sent while a provider only logs, and not once both send', async () => {
    const view = renderApp('/history');
    const banner = await screen.findByRole('complementary', { name: 'Test mode' });
    expect(banner).toHaveTextContent(
      'Test mode: SMS and push notifications are only written to the server’s log, nothing is sent.',
    );
    expect(within(banner).getByRole('link', { name: 'How to send for real' })).toHaveAttribute(
      'href',
      '/service',
    );
    view.unmount();

    const sending = (name: string) => ({ ...serviceInfo.providers.sms, name, id: name, description: name });
    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: { ...serviceInfo.providers, sms: sending('twilio') },
        }),
      ),
    );
    const smsOnly = renderApp('/dashboard');
    expect(await screen.findByRole('complementary', { name: 'Test mode' })).toHaveTextContent(
      'Test mode: Push notifications are only written',
    );
    smsOnly.unmount();

    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: { sms: sending('twilio'), smsFallback: null, push: sending('fcm') },
        }),
      ),
    );
    renderApp('/dashboard');
    await screen.findByRole('heading', { name: 'Dashboard', level: 1 });
    await waitFor(() => expect(screen.queryByRole('complementary', { name: 'Test mode' })).toBeNull());
  });

  it('says so in a few words on a narrow screen, the whole sentence still what a screen reader hears', async () => {
    renderApp('/history');
    const banner = await screen.findByRole('complementary', { name: 'Test mode' });
    const short = banner.querySelectorAll('.test-mode-short');
    expect([...short].map((el) => el.textContent)).toEqual(['SMS and push not sent.', 'Send for real']);
    for (const el of short) expect(el).toHaveAttribute('aria-hidden', 'true');
    // The link's name is the long one at any width (its short words hidden from screen readers).
    expect(within(banner).getByRole('link')).toHaveAccessibleName('How to send for real');
  });

  it('folds the links behind one button naming the page (phones), which a new page closes again', async () => {
    const { user } = renderApp('/history');
    await screen.findByRole('heading', { name: 'History', level: 1 });
    const toggle = screen.getByRole('button', { name: 'Menu: History' });
    expect(toggle).toHaveAttribute('aria-expanded', 'false');
    await user.click(toggle);
    expect(toggle).toHaveAttribute('aria-expanded', 'true');
    expect(document.getElementById('main-links')).toHaveClass('nav-list-open');
    await user.click(screen.getByRole('link', { name: 'Deliveries' }));
    await screen.findByRole('heading', { name: 'Deliveries', level: 1 });
    expect(screen.getByRole('button', { name: 'Menu: Deliveries' })).toHaveAttribute(
      'aria-expanded',
      'false',
    );
  });

  it('closes the phone menu with Escape or when focus leaves it, and takes focus to the new page', async () => {
    const { user } = renderApp('/history');
    await screen.findByRole('heading', { name: 'History', level: 1 });
    const toggle = screen.getByRole('button', { name: 'Menu: History' });
    await user.click(toggle);
    await user.tab();
    expect(screen.getByRole('link', { name: 'Dashboard' })).toHaveFocus();
    await user.keyboard('{Escape}');
    expect(toggle).toHaveAttribute('aria-expanded', 'false');
    expect(toggle).toHaveFocus();
    // Focus leaving the menu closes it.
    await user.click(toggle);
    expect(toggle).toHaveAttribute('aria-expanded', 'true');
    screen.getByRole('heading', { name: 'History', level: 1 }).setAttribute('tabindex', '-1');
    screen.getByRole('heading', { name: 'History', level: 1 }).focus();
    await waitFor(() => expect(toggle).toHaveAttribute('aria-expanded', 'false'));
    // A page chosen from the menu takes focus to its heading.
    await user.click(toggle);
    await user.click(screen.getByRole('link', { name: 'Deliveries' }));
    const heading = await screen.findByRole('heading', { name: 'Deliveries', level: 1 });
    await waitFor(() => expect(heading).toHaveFocus());
  });

  it('opens on the Dashboard after logging in, the page staff start from', async () => {
    const { location } = renderApp('/');
    await screen.findByRole('heading', { name: 'Dashboard', level: 1 });
    expect(location().pathname).toBe('/dashboard');
  });

  it('has a menu with the name and role of the person logged in, to change the password or log out', async () => {
    const requests = recordRequests();
    let loggedIn = true;
    server.use(
      http.get('/api/session', () =>
        loggedIn ? HttpResponse.json(operatorSession()) : problemJson(problem(401, 'Log in first.')),
      ),
      http.delete('/api/session', () => {
        loggedIn = false;
        return new HttpResponse(null, { status: 204 });
      }),
    );
    const { user, location } = renderApp('/service');
    const menu = await screen.findByRole('button', { name: 'Olivia Operator Operator' });
    expect(menu).toHaveAttribute('aria-expanded', 'false');
    expect(screen.queryByRole('button', { name: 'Log out' })).not.toBeInTheDocument();

    await user.click(menu);
    expect(menu).toHaveAttribute('aria-expanded', 'true');
    expect(screen.getByText('olivia')).toBeInTheDocument();
    await user.keyboard('{Escape}');
    expect(menu).toHaveAttribute('aria-expanded', 'false');
    expect(menu).toHaveFocus();

    await user.click(menu);
    await user.click(screen.getByRole('link', { name: 'Account and security' }));
    expect(location().pathname).toBe('/account');
    expect(
      await screen.findByRole('heading', { name: 'Account and security', level: 1 }),
    ).toBeInTheDocument();
    expect(menu).toHaveAttribute('aria-expanded', 'false');

    await user.click(menu);
    await user.click(screen.getByRole('button', { name: 'Log out' }));
    expect(await screen.findByRole('heading', { name: 'Log in', level: 1 })).toBeInTheDocument();
    // After logging out on purpose, the next login starts afresh on Send.
    expect(`${location().pathname}${location().search}`).toBe('/login');
    const logout = requests.find((r) => r.method === 'DELETE');
    expect(new URL(logout?.url ?? '').pathname).toBe('/api/session');
    expect(logout?.headers.get(CSRF_HEADER)).toBe('school-console');

    // Logged out, every other page leads back to the login page.
    await waitFor(() => expect(screen.queryByRole('navigation', { name: 'Main' })).not.toBeInTheDocument());
  });

  it('gives a long display name whole: in the title of the name the header cuts, and in the open menu', async () => {
    const name = 'Olivia Operator-Montgomery-Fitzwilliam';
    server.use(http.get('/api/session', () => HttpResponse.json(session({ displayName: name }))));
    const { user } = renderApp('/service');
    const menu = await screen.findByRole('button', { name: `${name} Admin` });
    expect(menu.querySelector('.user-name')).toHaveAttribute('title', name);
    await user.click(menu);
    const panel = document.getElementById(menu.getAttribute('aria-controls') ?? '');
    expect(within(panel as HTMLElement).getByText(name)).toBeVisible();
    expect(panel).toHaveTextContent('Logged in as admin');
  });

  describe('the times setting', () => {
    afterEach(() => setTimeZoneSetting('local'));

    it('shows times in UTC once chosen in the menu, and still when the console is opened again', async () => {
      server.use(http.get('/api/users', () => HttpResponse.json({ items: [staffUser()] })));
      const { user, unmount } = renderApp('/users');
      const lastLogin = async () =>
        (await screen.findByRole('table', { name: 'Staff accounts' })).querySelector('time');
      await screen.findByRole('table', { name: 'Staff accounts' }, { timeout: 5000 });
      await user.click(screen.getByRole('button', { name: /Admin$/ }));
      const group = screen.getByRole('group', { name: 'Show times in' });
      expect(within(group).getByRole('radio', { name: /^Local time/ })).toBeChecked();
      expect(within(group).getByRole('radio', { name: 'UTC' })).not.toBeChecked();

      await user.click(within(group).getByRole('radio', { name: 'UTC' }));
      expect(within(group).getByRole('radio', { name: 'UTC' })).toBeChecked();
      expect(await lastLogin()).toHaveTextContent(/ UTC$/);
      expect(await lastLogin()).toHaveAttribute('title', '2026-11-20 08:00:00.000 UTC');

      // The console opened again (a reload is in lib/time-zone.test.ts): still UTC.
      unmount();
      const again = renderApp('/users');
      await screen.findByRole('table', { name: 'Staff accounts' }, { timeout: 5000 });
      await again.user.click(screen.getByRole('button', { name: /Admin$/ }));
      expect(screen.getByRole('radio', { name: 'UTC' })).toBeChecked();
      expect(await lastLogin()).toHaveTextContent(/ UTC$/);
    });
  });

  it('says when it cannot tell who is logged in, and tries again', async () => {
    let failing = true;
    server.use(
      http.get('/api/session', () =>
        failing
          ? problemJson(problem(500, 'The database is not answering.'))
          : HttpResponse.json(operatorSession()),
      ),
    );
    const { user } = renderApp('/service');
    const alert = await screen.findByRole('alert', {}, { timeout: 5000 });
    expect(alert).toHaveTextContent('Could not check who is logged in: Internal server error (500)');
    expect(alert).toHaveTextContent('The database is not answering.');
    failing = false;
    await user.click(screen.getByRole('button', { name: 'Try again' }));
    expect(await screen.findByRole('heading', { name: 'Service', level: 1 })).toBeInTheDocument();
  });
});
