import { screen, waitFor } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { problem, session } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

function noUserYet() {
  server.use(
    http.get('/api/session', () => problemJson(problem(401, 'Log in first.'))),
    http.get('/api/setup', () => HttpResponse.json({ needed: true })),
  );
}

async function fill(user: ReturnType<typeof renderApp>['user'], confirm = 'a long first password') {
  await user.type(await screen.findByLabelText('Username'), '  Head.Teacher ');
  await user.type(screen.getByLabelText('Display name'), 'Sam Head');
  await user.type(screen.getByLabelText('Password'), 'a long first password');
  await user.type(screen.getByLabelText('Confirm password'), confirm);
  await user.click(screen.getByRole('button', { name: 'Create admin and log in' }));
}

describe('Setup', () => {
  it('makes the first admin with the token of the link, and logs them in', async () => {
    const requests = recordRequests();
    noUserYet();
    server.use(
      http.post('/api/setup', () =>
        HttpResponse.json(session({ username: 'head.teacher', displayName: 'Sam Head' })),
      ),
    );
    const { user, location } = renderApp('/setup?token=abc123');
    expect(await screen.findByRole('heading', { name: 'Set up the console', level: 1 })).toBeInTheDocument();
    await fill(user);

    await waitFor(() => expect(location().pathname).toBe('/dashboard'));
    expect(await screen.findByRole('button', { name: /Sam Head/ })).toBeInTheDocument();
    const post = requests.find((r) => r.method === 'POST');
    expect(new URL(post?.url ?? '').pathname).toBe('/api/setup');
    // The contract's rules: the username trimmed and lower-cased; the confirmation is not sent.
    expect(await post?.json()).toEqual({
      token: 'abc123',
      username: 'head.teacher',
      displayName: 'Sam Head',
      password: 'a long first password',
    });
  });

  it('checks the two passwords are the same before sending', async () => {
    const requests = recordRequests();
    noUserYet();
    const { user } = renderApp('/setup?token=abc123');
    await fill(user, 'a different password');
    expect(await screen.findByText('The two passwords are not the same.')).toBeInTheDocument();
    expect(screen.getByLabelText('Confirm password')).toHaveAttribute('aria-invalid', 'true');
    expect(requests.filter((r) => r.method === 'POST')).toHaveLength(0);
  });

  it('says when the link is wrong or has expired', async () => {
    noUserYet();
    server.use(http.post('/api/setup', () => problemJson(problem(403, 'The setup token is not valid.'))));
    const { user } = renderApp('/setup?token=old');
    await fill(user);
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('This setup link is wrong or has expired.');
    expect(alert).toHaveTextContent('Restart the server');
  });

  it('explains where the link is when the address has no token', async () => {
    noUserYet();
    renderApp('/setup');
    expect(await screen.findByText('This page needs the setup link.')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Create admin and log in' })).not.toBeInTheDocument();
  });

  it('points to the login page once an account exists', async () => {
    server.use(http.get('/api/session', () => problemJson(problem(401, 'Log in first.'))));
    const { user, location } = renderApp('/setup?token=abc123');
    expect(
      await screen.findByText('The console is set up already: staff accounts exist.'),
    ).toBeInTheDocument();
    await user.click(screen.getByRole('link', { name: 'Go to the login page' }));
    expect(location().pathname).toBe('/login');
  });
});
