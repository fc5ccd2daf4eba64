import { CSRF_HEADER } from '@school/contract';
import { screen, waitFor } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { delivery, deliveryList, problem, session } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server, sessionThatEnds } from '../../../testing/server';

const WRONG = 'Wrong username or password.';

/** Nobody is logged in until POST /api/session succeeds with `password`. */
function loggedOutServer(password = 'correct horse battery') {
  let current: ReturnType<typeof session> | null = null;
  server.use(
    http.get('/api/session', () =>
      current ? HttpResponse.json(current) : problemJson(problem(401, 'Log in first.')),
    ),
    http.post('/api/session', async ({ request }) => {
      const body = (await request.json()) as { username: string; password: string };
      if (body.password !== password) return problemJson(problem(401, WRONG));
      current = session({ username: body.username });
      return HttpResponse.json(current);
    }),
  );
}

async function logIn(user: ReturnType<typeof renderApp>['user'], password = 'correct horse battery') {
  await user.type(await screen.findByLabelText('Username'), 'admin');
  await user.type(screen.getByLabelText('Password'), password);
  await user.click(screen.getByRole('button', { name: 'Log in' }));
}

describe('Logging in', () => {
  it('sends anyone not logged in to the login page, then on to the page they asked for', async () => {
    const requests = recordRequests();
    loggedOutServer();
    server.use(http.get('/api/deliveries', () => HttpResponse.json(deliveryList([delivery()]))));
    const { user, location } = renderApp('/deliveries?kind=sms');

    expect(await screen.findByRole('heading', { name: 'Log in', level: 1 })).toBeInTheDocument();
    expect(location().pathname).toBe('/login');
    expect(location().search).toBe('?next=/deliveries%3Fkind%3Dsms');
    // Logged out, the console shows nothing else: no navigation, no page.
    expect(screen.queryByRole('navigation', { name: 'Main' })).not.toBeInTheDocument();

    await logIn(user);
    expect(await screen.findByRole('heading', { name: 'Deliveries', level: 1 })).toBeInTheDocument();
    expect(`${location().pathname}${location().search}`).toBe('/deliveries?kind=sms');
    expect(screen.getByRole('navigation', { name: 'Main' })).toBeInTheDocument();

    const post = requests.find((r) => r.method === 'POST');
    expect(new URL(post?.url ?? '').pathname).toBe('/api/session');
    expect(post?.headers.get(CSRF_HEADER)).toBe('school-console');
    expect(await post?.json()).toEqual({ username: 'admin', password: 'correct horse battery' });
  });

  it('says when the username or password is wrong, and keeps the username', async () => {
    loggedOutServer();
    const { user, location } = renderApp('/login');
    await logIn(user, 'not the password');
    expect(await screen.findByRole('alert')).toHaveTextContent(WRONG);
    expect(location().pathname).toBe('/login');
    expect(screen.getByLabelText('Username')).toHaveValue('admin');
    expect(screen.getByLabelText('Password')).toHaveValue('');
    expect(screen.getByLabelText('Password')).toHaveFocus();
  });

  it('says how long to wait after too many failed attempts', async () => {
    loggedOutServer();
    server.use(
      http.post('/api/session', () =>
        problemJson(problem(429, 'Too many failed logins from this address.'), { 'Retry-After': '300' }),
      ),
    );
    const { user } = renderApp('/login');
    await logIn(user);
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'Too many failed attempts. Try again in 5 minutes.',
    );
  });

  it('says when the server cannot be reached', async () => {
    loggedOutServer();
    server.use(http.post('/api/session', () => HttpResponse.error()));
    const { user } = renderApp('/login');
    await logIn(user);
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'The server could not be reached. Check the connection and try again.',
    );
  });

  it('starts with the cursor in Username', async () => {
    loggedOutServer();
    renderApp('/login');
    expect(await screen.findByLabelText('Username')).toHaveFocus();
    expect(screen.queryByText('Your session ended; log in to go on.')).not.toBeInTheDocument();
  });

  it('says when the session ended under way, and brings the reader back to the page after logging in', async () => {
    const staffSession = sessionThatEnds();
    server.use(
      http.get('/api/calls', () =>
        staffSession.ended
          ? problemJson(problem(401, 'Your session has ended.'))
          : HttpResponse.json({ items: [], nextCursor: null }),
      ),
    );
    const { user, location } = renderApp('/history?outcome=server-error');
    await screen.findByRole('heading', { name: 'History', level: 1 });
    staffSession.end();
    // The next request of the page finds the session over.
    await user.click(screen.getByRole('link', { name: 'Deliveries' }));
    await user.click(screen.getByRole('link', { name: 'History' }));
    expect(await screen.findByText('Your session ended; log in to go on.')).toBeInTheDocument();
    expect(location().pathname).toBe('/login');
    await logIn(user);
    await waitFor(() => expect(location().pathname).toBe('/history'));
  });

  it('asks for both fields before sending anything', async () => {
    const requests = recordRequests();
    loggedOutServer();
    const { user } = renderApp('/login');
    await user.click(await screen.findByRole('button', { name: 'Log in' }));
    expect(await screen.findByText('Enter your username.')).toBeInTheDocument();
    expect(screen.getByText('Enter your password.')).toBeInTheDocument();
    expect(requests.filter((r) => r.method === 'POST')).toHaveLength(0);
  });

  it.each(['//evil.example/phish', '/.//evil.example/x', '/..//evil.example/x', '/%2e%2e//evil.example/x'])(
    'never follows a `next` that leads off the console: %s',
    async (next) => {
      loggedOutServer();
      const { user, location } = renderApp(`/login?next=${encodeURIComponent(next)}`);
      await logIn(user);
      await waitFor(() => expect(location().pathname).toBe('/dashboard'));
      expect(await screen.findByRole('heading', { name: 'Dashboard', level: 1 })).toBeInTheDocument();
    },
  );

  it('sends someone already logged in on from the login page', async () => {
    const { location } = renderApp('/login?next=/service');
    await waitFor(() => expect(location().pathname).toBe('/service'));
  });

  it('sends the reader to log in when a page’s request answers 401, and back afterwards', async () => {
    let loggedIn = true;
    server.use(
      http.get('/api/session', () =>
        loggedIn ? HttpResponse.json(session()) : problemJson(problem(401, 'Log in first.')),
      ),
      http.get('/api/deliveries', () => {
        if (loggedIn) {
          // The session expires on the server while the console is open.
          loggedIn = false;
          return problemJson(problem(401, 'Your session has ended.'));
        }
        return problemJson(problem(401, 'Log in first.'));
      }),
    );
    const { user, location } = renderApp('/deliveries?status=dead');
    expect(await screen.findByRole('heading', { name: 'Log in', level: 1 })).toBeInTheDocument();
    expect(location().pathname).toBe('/login');
    expect(location().search).toBe('?next=/deliveries%3Fstatus%3Ddead');

    server.use(
      http.post('/api/session', () => {
        loggedIn = true;
        return HttpResponse.json(session());
      }),
      http.get('/api/deliveries', () => HttpResponse.json(deliveryList([delivery({ id: 77 })]))),
    );
    await logIn(user);
    expect(await screen.findByRole('link', { name: 'Delivery #77' })).toBeInTheDocument();
    expect(`${location().pathname}${location().search}`).toBe('/deliveries?status=dead');
  });

  it('sends the reader to log in when a save answers 401', async () => {
    server.use(
      http.get('/api/deliveries', () => HttpResponse.json(deliveryList([delivery()], { dead: 2 }))),
      http.post('/api/deliveries/retry-dead', () => problemJson(problem(401, 'Your session has ended.'))),
    );
    const { user, location } = renderApp('/deliveries');
    await screen.findByRole('table');
    server.use(http.get('/api/session', () => problemJson(problem(401, 'Log in first.'))));
    await user.click(screen.getByRole('button', { name: 'Retry all dead' }));
    await user.click(screen.getByRole('button', { name: 'Yes, send 2 again' }));
    expect(await screen.findByRole('heading', { name: 'Log in', level: 1 })).toBeInTheDocument();
    expect(location().search).toBe('?next=/deliveries');
  });

  it('says so when no account exists yet', async () => {
    loggedOutServer();
    server.use(http.get('/api/setup', () => HttpResponse.json({ needed: true })));
    renderApp('/login');
    expect(await screen.findByText('No account exists yet.')).toBeInTheDocument();
    expect(screen.getByRole('status')).toHaveTextContent('/setup?token=…');
  });
});

describe('Logging in with single sign-on', () => {
  const withSso = (localLogin = true) =>
    server.use(
      http.get('/api/session/login-options', () =>
        HttpResponse.json({ localLogin, sso: { label: 'Northside School' } }),
      ),
    );

  it('offers the school’s button above the password form, carrying where to go next', async () => {
    loggedOutServer();
    withSso();
    renderApp('/login?next=/deliveries%3Fkind%3Dsms');
    const button = await screen.findByRole('link', { name: 'Log in with Northside School' });
    expect(button).toHaveAttribute('href', '/api/session/oidc/start?next=%2Fdeliveries%3Fkind%3Dsms');
    const form = screen.getByRole('form', { name: 'Log in' });
    // The button comes first, in reading order.
    expect(button.compareDocumentPosition(form) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(screen.getByText('or with a username and password')).toBeInTheDocument();
  });

  it('shows the button alone when password logins are off', async () => {
    loggedOutServer();
    withSso(false);
    renderApp('/login');
    expect(await screen.findByRole('link', { name: 'Log in with Northside School' })).toBeInTheDocument();
    expect(screen.queryByRole('form', { name: 'Log in' })).not.toBeInTheDocument();
    expect(screen.queryByLabelText('Password')).not.toBeInTheDocument();
  });

  it('says why the school account was refused', async () => {
    loggedOutServer();
    withSso();
    renderApp('/login?sso=refused');
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'Your school account is not allowed to use this console',
    );
  });

  it('ignores an sso outcome it does not know', async () => {
    loggedOutServer();
    renderApp('/login?sso=<b>hi</b>');
    await screen.findByRole('form', { name: 'Log in' });
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });
});

describe('Logging in with a second factor', () => {
  /** The password is right; the code 123456 (or the recovery code abcde-fghij) opens the session. */
  function secondFactorServer() {
    let current: ReturnType<typeof session> | null = null;
    const bodies: unknown[] = [];
    server.use(
      http.get('/api/session', () =>
        current ? HttpResponse.json(current) : problemJson(problem(401, 'Log in first.')),
      ),
      http.post('/api/session', async ({ request }) => {
        const body = (await request.json()) as { username: string; password: string; code?: string };
        bodies.push(body);
        if (body.password !== 'correct horse battery') return problemJson(problem(401, WRONG));
        if (!body.code) {
          return problemJson(
            problem(401, 'Enter the code from your authenticator app.', { secondFactorRequired: true }),
          );
        }
        if (body.code !== '123456' && body.code !== 'abcde-fghij') {
          return problemJson(
            problem(401, 'That code is not right, or was used already.', { secondFactorRequired: true }),
          );
        }
        current = session({ username: body.username }, { secondFactor: { enabled: true, required: false } });
        return HttpResponse.json(current);
      }),
    );
    return bodies;
  }

  it('asks for the code after the password, then logs in', async () => {
    const bodies = secondFactorServer();
    const { user, location } = renderApp('/login?next=/service');
    await logIn(user);
    const code = await screen.findByLabelText('Code');
    expect(code).toHaveFocus();
    // The asking is no failure: nothing in red.
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
    await user.type(code, '123456');
    await user.click(screen.getByRole('button', { name: 'Log in' }));
    await waitFor(() => expect(location().pathname).toBe('/service'));
    expect(bodies).toEqual([
      { username: 'admin', password: 'correct horse battery' },
      { username: 'admin', password: 'correct horse battery', code: '123456' },
    ]);
  });

  it('says when the code is wrong and lets it be typed again, or go back', async () => {
    secondFactorServer();
    const { user } = renderApp('/login');
    await logIn(user);
    await user.type(await screen.findByLabelText('Code'), '000000');
    await user.click(screen.getByRole('button', { name: 'Log in' }));
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'That code is not right, or was used already.',
    );
    expect(screen.getByLabelText('Code')).toHaveValue('');
    expect(screen.getByLabelText('Code')).toHaveFocus();
    await user.click(screen.getByRole('button', { name: 'Back' }));
    expect(await screen.findByLabelText('Password')).toBeInTheDocument();
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('takes a recovery code in the same field', async () => {
    secondFactorServer();
    const { user, location } = renderApp('/login');
    await logIn(user);
    await user.type(await screen.findByLabelText('Code'), 'abcde-fghij');
    await user.click(screen.getByRole('button', { name: 'Log in' }));
    await waitFor(() => expect(location().pathname).not.toBe('/login'));
  });
});
