import { act, screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import { book, callList, callSummary } from '../testing/data';
import { renderApp } from '../testing/render';
import { recordRequests, server } from '../testing/server';
import { type LazyPage, pages } from './pages';

// Pages whose code arrives only when the test says: what the console asks before that, it
// asked as the page was opened, not once the page had rendered. (A page's code, once loaded,
// stays loaded for the rest of this file: each test opens a page of its own.)
const code = vi.hoisted(() => {
  const gate = () => {
    let open = () => {};
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { opened, open: () => open() };
  };
  return { books: gate(), history: gate(), dashboard: gate(), users: gate(), send: gate() };
});
vi.mock('../features/books/components/books-page', async (importOriginal) => {
  await code.books.opened;
  return importOriginal();
});
vi.mock('../features/history/components/history-page', async (importOriginal) => {
  await code.history.opened;
  return importOriginal();
});
vi.mock('../features/dashboard/components/dashboard-page', async (importOriginal) => {
  await code.dashboard.opened;
  return importOriginal();
});
vi.mock('../features/users/components/users-page', async (importOriginal) => {
  await code.users.opened;
  return importOriginal();
});
vi.mock('../features/send/components/send-page', async (importOriginal) => {
  await code.send.opened;
  return importOriginal();
});

/** Lets the page's code arrive, and waits until it has (its import transformed and run). */
const arrive = (gate: { open(): void }, page: LazyPage) =>
  act(async () => {
    gate.open();
    await page.load();
  });

const asked = (requests: Request[], pathname: string) =>
  requests.filter((r) => new URL(r.url).pathname === pathname).map((r) => new URL(r.url).searchParams);

const menuLink = (name: string) =>
  within(screen.getByRole('navigation', { name: 'Main' })).getByRole('link', { name });

describe('Opening a page', () => {
  it('asks for its data as its menu link is clicked, while its code is still on the way, and only once', async () => {
    server.use(http.get('/api/books', () => HttpResponse.json([book({ filename: 'maths-7B.pdf' })])));
    const requests = recordRequests();
    const { user } = renderApp('/service');
    await screen.findByRole('heading', { name: 'Service', level: 1 });

    await user.click(menuLink('Books'));
    await waitFor(() => expect(asked(requests, '/api/books')).toHaveLength(1));
    expect(screen.queryByRole('heading', { name: 'Books', level: 1 })).not.toBeInTheDocument();

    await arrive(code.books, pages.books);
    expect(await screen.findByRole('cell', { name: /maths-7B\.pdf/ })).toBeInTheDocument();
    // The page found the answer under its own query's key.
    expect(asked(requests, '/api/books')).toHaveLength(1);
  });

  it('asks with the filters in the address, as the page itself would', async () => {
    server.use(
      http.get('/api/calls', () =>
        HttpResponse.json(callList([callSummary({ id: 41, operation: 'pushNoti' })])),
      ),
    );
    const requests = recordRequests();
    renderApp('/history?operation=pushNoti&outcome=ok');

    await waitFor(() => expect(asked(requests, '/api/calls/count')).toHaveLength(1));
    const [list] = asked(requests, '/api/calls');
    expect(list?.get('operation')).toBe('pushNoti');
    expect(list?.get('outcome')).toBe('ok');
    expect(asked(requests, '/api/calls/count')[0]?.get('operation')).toBe('pushNoti');
    expect(screen.queryByRole('heading', { name: 'History', level: 1 })).not.toBeInTheDocument();

    await arrive(code.history, pages.history);
    expect(await screen.findByRole('link', { name: /^Call 41,/ })).toBeInTheDocument();
    expect(asked(requests, '/api/calls')).toHaveLength(1);
    expect(asked(requests, '/api/calls/count')).toHaveLength(1);
  });

  it('asks for the Dashboard’s statistics up to the moment it was opened, the moment the page then shows', async () => {
    const requests = recordRequests();
    const { user } = renderApp('/service');
    await screen.findByRole('heading', { name: 'Service', level: 1 });

    await user.click(menuLink('Dashboard'));
    // This period and the one before.
    await waitFor(() => expect(asked(requests, '/api/stats')).toHaveLength(2));
    expect(screen.queryByRole('heading', { name: 'Dashboard', level: 1 })).not.toBeInTheDocument();

    await arrive(code.dashboard, pages.dashboard);
    expect(await screen.findByText('No calls in this period.')).toBeInTheDocument();
    expect(asked(requests, '/api/stats')).toHaveLength(2);
  });

  it('keeps the page shown until the next one’s code has arrived, its link saying it is on its way', async () => {
    const { user } = renderApp('/service');
    await screen.findByRole('heading', { name: 'Service', level: 1 });

    await user.click(menuLink('Users'));
    expect(menuLink('Users')).toHaveClass('nav-link-opening');
    expect(screen.getByRole('main')).toHaveAttribute('aria-busy', 'true');
    expect(screen.getByRole('heading', { name: 'Service', level: 1 })).toBeInTheDocument();
    expect(screen.queryByText('Loading the page…')).not.toBeInTheDocument();

    await arrive(code.users, pages.users);
    expect(await screen.findByRole('heading', { name: 'Users', level: 1 })).toBeInTheDocument();
    expect(screen.queryByRole('heading', { name: 'Service', level: 1 })).not.toBeInTheDocument();
    expect(menuLink('Users')).not.toHaveClass('nav-link-opening');
    expect(menuLink('Users')).toHaveAttribute('aria-current', 'page');
    expect(screen.getByRole('main')).not.toHaveAttribute('aria-busy');
  });

  it('goes from /send to its first operation before Send’s code has arrived, saying the page is loading', async () => {
    // A page that navigated as it mounted could undo a click made while its code was loading.
    const { location } = renderApp('/send');
    await waitFor(() => expect(location().pathname).toBe('/send/AuthCode'));
    expect(screen.getByText('Loading the page…')).toBeInTheDocument();

    await arrive(code.send, pages.send);
    expect(
      await screen.findByRole('heading', { name: 'Send a login code AuthCode', level: 2 }),
    ).toBeInTheDocument();
  });
});
