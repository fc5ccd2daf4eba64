import { CSRF_HEADER, ROLE_LABELS, type User } from '@school/contract';
import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { problem, school, session, staffUser } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

const ana = staffUser({
  id: 2,
  username: 'ana',
  displayName: 'Ana Lopez',
  role: 'operator',
  lastLoginAt: null,
});

const writes = (requests: Request[]) => requests.filter((r) => r.method !== 'GET');

/** The users the API lists, changed by its PATCH as the server would. */
function usersServer(initial: User[] = [staffUser(), ana]) {
  let users = initial;
  server.use(
    http.get('/api/users', () => HttpResponse.json({ items: users })),
    http.patch('/api/users/:id', async ({ params, request }) => {
      const id = Number(params.id);
      const { password: _password, ...changes } = (await request.json()) as Partial<User> & {
        password?: string;
      };
      users = users.map((u) => (u.id === id ? { ...u, ...changes } : u));
      return HttpResponse.json(users.find((u) => u.id === id));
    }),
  );
}

const rowOf = async (username: string) =>
  (await screen.findByText(username, { selector: 'code' })).closest('tr') as HTMLElement;

describe('Users', () => {
  it("links to one's own password and second factor", async () => {
    usersServer([staffUser()]);
    renderApp('/users');
    await screen.findByRole('table', { name: 'Staff accounts' });
    expect(screen.getByRole('link', { name: 'Account and security' })).toHaveAttribute('href', '/account');
  });

  it('lists the staff: username, display name, role, status and last login', async () => {
    usersServer([staffUser(), { ...ana, disabled: true }]);
    renderApp('/users');
    const table = await screen.findByRole('table', { name: 'Staff accounts' });
    expect(
      within(table)
        .getAllByRole('columnheader')
        .map((th) => th.textContent),
    ).toEqual(['Username', 'Display name', 'Role', 'Schools', 'Status', 'Sign-in', 'Last login', 'Actions']);
    const [, admin, operator] = within(table).getAllByRole('row');
    if (!admin || !operator) throw new Error('missing rows');
    const cells = within(admin).getAllByRole('cell');
    expect(cells[0]).toHaveTextContent('admin (you)');
    expect(cells[1]).toHaveTextContent('Alex Admin');
    expect(cells[2]).toHaveTextContent('Admin');
    expect(cells[3]).toHaveTextContent('All schools');
    expect(cells[4]).toHaveTextContent('Active');
    expect(cells[5]).toHaveTextContent('Password only');
    expect(cells[6]?.querySelector('time')).toHaveAttribute('datetime', '2026-11-20T08:00:00.000Z');
    const anaCells = within(operator).getAllByRole('cell');
    expect(anaCells[2]).toHaveTextContent('Operator');
    expect(anaCells[4]).toHaveTextContent('Disabled');
    expect(anaCells[6]).toHaveTextContent('Never');
    expect(within(operator).getByRole('button', { name: 'Enable ana' })).toBeInTheDocument();
  });

  it('says how each logs in, and resets a lost second factor after asking', async () => {
    const requests = recordRequests();
    const sso = staffUser({
      id: 3,
      username: 'sam@school.example',
      displayName: 'Sam',
      sso: true,
      ssoSubject: '8f14e45f-ceea-467f',
    });
    usersServer([staffUser(), { ...ana, secondFactor: true }, sso]);
    server.use(
      http.delete('/api/users/:id/totp', ({ params }) =>
        HttpResponse.json({ ...ana, id: Number(params.id), secondFactor: false }),
      ),
    );
    const { user } = renderApp('/users');
    const anaRow = await rowOf('ana');
    expect(within(anaRow).getAllByRole('cell')[5]).toHaveTextContent('Password + second factor');
    const samRow = await rowOf('sam@school.example');
    // Who they are at the identity provider: lookalike usernames are told apart by it.
    expect(within(samRow).getAllByRole('cell')[5]).toHaveTextContent('Single sign-on as 8f14e45f-ceea-467f');
    // No password to set for a single sign-on user, no second factor to reset for one without.
    expect(within(samRow).queryByRole('button', { name: /Set password/ })).not.toBeInTheDocument();
    expect(within(samRow).queryByRole('button', { name: /Reset second factor/ })).not.toBeInTheDocument();

    await user.click(within(anaRow).getByRole('button', { name: 'Reset second factor of ana' }));
    expect(screen.getByText(/Reset the second factor of ana \(Ana Lopez\)\?/)).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Yes, reset' }));
    expect(
      await screen.findByText('The second factor of ana is reset and they were logged out.'),
    ).toBeInTheDocument();
    const sent = writes(requests);
    expect(sent.map((r) => `${r.method} ${new URL(r.url).pathname}`)).toEqual(['DELETE /api/users/2/totp']);
  });

  it('adds a user with the JSON the API takes', async () => {
    const requests = recordRequests();
    let users = [staffUser()];
    server.use(
      http.get('/api/users', () => HttpResponse.json({ items: users })),
      http.post('/api/users', async ({ request }) => {
        const body = (await request.json()) as Pick<User, 'username' | 'displayName' | 'role'>;
        const created = staffUser({ id: 3, ...body, lastLoginAt: null });
        users = [...users, created];
        return HttpResponse.json(created, { status: 201 });
      }),
    );
    const { user } = renderApp('/users');
    await screen.findByRole('table');
    const form = screen.getByRole('form', { name: 'Add a user' });
    await user.type(within(form).getByLabelText('Username'), 'Ben.Smith');
    await user.type(within(form).getByLabelText('Display name'), 'Ben Smith');
    const role = within(form).getByLabelText('Role');
    expect(role).toHaveValue('operator');
    // The choices are a word each, short enough for a phone's select; what each may do is below.
    expect(
      within(role)
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Admin', 'Operator']);
    expect(role).toHaveAccessibleDescription(`${ROLE_LABELS.admin}. ${ROLE_LABELS.operator}.`);
    await user.type(within(form).getByLabelText('Initial password'), 'first password 1');
    await user.click(within(form).getByRole('button', { name: 'Add user' }));

    expect(await screen.findByText('Added ben.smith (Operator, All schools).')).toBeInTheDocument();
    const [post] = writes(requests);
    expect(new URL(post?.url ?? '').pathname).toBe('/api/users');
    expect(post?.headers.get(CSRF_HEADER)).toBe('school-console');
    expect(await post?.json()).toEqual({
      username: 'ben.smith',
      displayName: 'Ben Smith',
      role: 'operator',
      password: 'first password 1',
      schoolIds: null,
    });
    expect(await rowOf('ben.smith')).toHaveTextContent('Ben Smith');
    expect(within(form).getByLabelText('Username')).toHaveValue('');
  });

  it('checks the contract’s rules before sending', async () => {
    const requests = recordRequests();
    usersServer();
    const { user } = renderApp('/users');
    await screen.findByRole('table');
    const form = screen.getByRole('form', { name: 'Add a user' });
    await user.type(within(form).getByLabelText('Username'), 'no spaces please');
    await user.type(within(form).getByLabelText('Initial password'), 'short');
    await user.click(within(form).getByRole('button', { name: 'Add user' }));
    expect(
      await within(form).findByText('Use 2 to 64 letters, digits, dots, dashes, underscores or @.'),
    ).toBeInTheDocument();
    expect(within(form).getByText('Give a display name.')).toBeInTheDocument();
    expect(within(form).getByLabelText('Initial password')).toHaveAccessibleDescription(
      /Use at least 10 characters\./,
    );
    expect(writes(requests)).toHaveLength(0);
  });

  it('shows the 409 when the username is taken', async () => {
    usersServer();
    server.use(http.post('/api/users', () => problemJson(problem(409, 'The username ana is taken.'))));
    const { user } = renderApp('/users');
    await screen.findByRole('table');
    const form = screen.getByRole('form', { name: 'Add a user' });
    await user.type(within(form).getByLabelText('Username'), 'ana');
    await user.type(within(form).getByLabelText('Display name'), 'Another Ana');
    await user.type(within(form).getByLabelText('Initial password'), 'first password 1');
    await user.click(within(form).getByRole('button', { name: 'Add user' }));
    expect(await within(form).findByRole('alert')).toHaveTextContent(
      'Not added: The username ana is taken. (HTTP 409)',
    );
    expect(within(form).getByLabelText('Username')).toHaveValue('ana');
  });

  it('asks before disabling a user, then disables them', async () => {
    const requests = recordRequests();
    usersServer();
    const { user } = renderApp('/users');
    const row = await rowOf('ana');
    await user.click(within(row).getByRole('button', { name: 'Disable ana' }));
    const question = within(row).getByRole('group', {
      name: 'Disable ana (Ana Lopez)? They are logged out at once and cannot log in until enabled again.',
    });
    expect(writes(requests)).toHaveLength(0);
    await user.click(within(question).getByRole('button', { name: 'Yes, disable' }));

    expect(await screen.findByText('ana is disabled and was logged out.')).toBeInTheDocument();
    await waitFor(() => expect(within(row).getAllByRole('cell')[4]).toHaveTextContent('Disabled'));
    const [patch] = writes(requests);
    expect(patch?.method).toBe('PATCH');
    expect(new URL(patch?.url ?? '').pathname).toBe('/api/users/2');
    expect(patch?.headers.get(CSRF_HEADER)).toBe('school-console');
    expect(await patch?.json()).toEqual({ disabled: true });

    await user.click(within(row).getByRole('button', { name: 'Enable ana' }));
    expect(await screen.findByText('ana is enabled and can log in again.')).toBeInTheDocument();
    expect(await writes(requests)[1]?.json()).toEqual({ disabled: false });
  });

  it('does not offer the only admin a step down or a disable, and says why', async () => {
    usersServer();
    renderApp('/users');
    const row = await rowOf('admin');
    expect(row).toHaveTextContent(
      'The only admin of every school: make someone else one before you step down, are limited to schools or are disabled.',
    );
    expect(within(row).queryByRole('button', { name: 'Make admin an operator' })).not.toBeInTheDocument();
    expect(within(row).queryByRole('button', { name: 'Disable admin' })).not.toBeInTheDocument();
    // The operator's row offers both as before.
    const other = await rowOf('ana');
    expect(within(other).getByRole('button', { name: 'Make ana an admin' })).toBeInTheDocument();
  });

  it('shows plainly why the server refused to leave no admin (another admin changed meanwhile)', async () => {
    const detail = 'There must be at least one enabled admin: make another user an admin first.';
    usersServer([staffUser(), { ...ana, role: 'admin' }]);
    server.use(http.patch('/api/users/1', () => problemJson(problem(409, detail))));
    const { user } = renderApp('/users');
    const row = await rowOf('admin');
    await user.click(within(row).getByRole('button', { name: 'Make admin an operator' }));
    expect(
      within(row).getByRole('group', { name: /^Make your own account an operator\?/ }),
    ).toBeInTheDocument();
    await user.click(within(row).getByRole('button', { name: 'Yes, make an operator' }));

    expect(await within(row).findByRole('alert')).toHaveTextContent(`Not changed: ${detail} (HTTP 409)`);
    // The question has closed; the row is unchanged.
    expect(within(row).queryByRole('group')).not.toBeInTheDocument();
    expect(within(row).getAllByRole('cell')[2]).toHaveTextContent('Admin');
    expect(within(row).getByRole('button', { name: 'Make admin an operator' })).toHaveFocus();
  });

  it('reads the session again after a change to one’s own account only (a new role, new pages)', async () => {
    const requests = recordRequests();
    usersServer();
    let role: User['role'] = 'admin';
    server.use(
      http.get('/api/session', () => HttpResponse.json(session({ role }))),
      // Notes the new role, then leaves the answer to usersServer's handler.
      http.patch('/api/users/1', async ({ request }) => {
        role = ((await request.clone().json()) as Partial<User>).role ?? role;
      }),
    );
    const sessionReads = () => requests.filter((r) => new URL(r.url).pathname === '/api/session').length;
    const { user } = renderApp('/users');
    const nav = await screen.findByRole('navigation', { name: 'Main' });
    const other = await rowOf('ana');
    const before = sessionReads();
    await user.click(within(other).getByRole('button', { name: 'Make ana an admin' }));
    await user.click(within(other).getByRole('button', { name: 'Yes, make an admin' }));
    expect(await screen.findByText('ana is now an admin.')).toBeInTheDocument();
    expect(sessionReads()).toBe(before);

    const own = await rowOf('admin');
    await user.click(within(own).getByRole('button', { name: 'Make admin an operator' }));
    await user.click(within(own).getByRole('button', { name: 'Yes, make an operator' }));
    await waitFor(() => expect(within(nav).queryByRole('link', { name: 'Users' })).not.toBeInTheDocument());
    expect(sessionReads()).toBeGreaterThan(before);
  });

  it('changes a role after asking', async () => {
    const requests = recordRequests();
    usersServer();
    const { user } = renderApp('/users');
    const row = await rowOf('ana');
    await user.click(within(row).getByRole('button', { name: 'Make ana an admin' }));
    await user.click(within(row).getByRole('button', { name: 'Yes, make an admin' }));
    expect(await screen.findByText('ana is now an admin.')).toBeInTheDocument();
    await waitFor(() => expect(within(row).getAllByRole('cell')[2]).toHaveTextContent('Admin'));
    expect(await writes(requests)[0]?.json()).toEqual({ role: 'admin' });
  });

  it('sets a new password for a user', async () => {
    const requests = recordRequests();
    usersServer();
    const { user } = renderApp('/users');
    const row = await rowOf('ana');
    await user.click(within(row).getByRole('button', { name: 'Set password for ana' }));
    const form = screen.getByRole('form', { name: 'Set a new password for ana' });
    expect(within(form).getByLabelText('New password')).toHaveFocus();
    await user.type(within(form).getByLabelText('New password'), 'a new password 2');
    await user.type(within(form).getByLabelText('Confirm new password'), 'a new password 2');
    await user.click(within(form).getByRole('button', { name: 'Set password' }));

    expect(
      await screen.findByText('New password set for ana. They were logged out and log in with it now.'),
    ).toBeInTheDocument();
    expect(screen.queryByRole('form', { name: 'Set a new password for ana' })).not.toBeInTheDocument();
    const [patch] = writes(requests);
    expect(new URL(patch?.url ?? '').pathname).toBe('/api/users/2');
    expect(await patch?.json()).toEqual({ password: 'a new password 2' });
  });

  describe('schools', () => {
    const northfield = school();
    const southgate = school({ id: 2, name: 'Southgate Primary', baseUrl: 'https://southgate.example.org' });
    const withSchools = () =>
      server.use(http.get('/api/schools', () => HttpResponse.json([northfield, southgate])));

    it('shows each user’s schools by name, or All schools', async () => {
      withSchools();
      usersServer([
        staffUser(),
        { ...ana, schoolIds: [1, 2] },
        staffUser({ id: 4, username: 'gone', schoolIds: [9] }),
      ]);
      renderApp('/users');
      const anaRow = await rowOf('ana');
      await waitFor(() =>
        expect(within(anaRow).getAllByRole('cell')[3]).toHaveTextContent(
          'Northfield Academy, Southgate Primary',
        ),
      );
      expect(within(await rowOf('admin')).getAllByRole('cell')[3]).toHaveTextContent('All schools');
      // A school deleted since is named as such, never read as every school.
      expect(within(await rowOf('gone')).getAllByRole('cell')[3]).toHaveTextContent('school 9 (deleted)');
    });

    it('adds a user limited to the schools ticked', async () => {
      const requests = recordRequests();
      withSchools();
      let users = [staffUser()];
      server.use(
        http.get('/api/users', () => HttpResponse.json({ items: users })),
        http.post('/api/users', async ({ request }) => {
          const body = (await request.json()) as Pick<
            User,
            'username' | 'displayName' | 'role' | 'schoolIds'
          >;
          const created = staffUser({ id: 3, ...body, lastLoginAt: null });
          users = [...users, created];
          return HttpResponse.json(created, { status: 201 });
        }),
      );
      const { user } = renderApp('/users');
      await screen.findByRole('table');
      const form = screen.getByRole('form', { name: 'Add a user' });
      await user.type(within(form).getByLabelText('Username'), 'sam');
      await user.type(within(form).getByLabelText('Display name'), 'Sam Office');
      await user.type(within(form).getByLabelText('Initial password'), 'first password 1');
      const schools = within(form).getByRole('group', { name: 'Schools' });
      expect(within(schools).getByRole('radio', { name: 'All schools' })).toBeChecked();
      await user.click(within(schools).getByRole('radio', { name: 'Only these schools' }));
      // None ticked is a mistake, not every school: said, and nothing sent.
      await user.click(within(form).getByRole('button', { name: 'Add user' }));
      expect(
        await within(schools).findByText('Tick at least one school, or choose All schools.'),
      ).toBeInTheDocument();
      expect(schools).toHaveAccessibleDescription(/Tick at least one school, or choose All schools\./);
      expect(writes(requests)).toHaveLength(0);
      await user.click(within(schools).getByRole('checkbox', { name: 'Southgate Primary' }));
      await user.click(within(form).getByRole('button', { name: 'Add user' }));

      expect(await screen.findByText('Added sam (Operator, Southgate Primary).')).toBeInTheDocument();
      expect(await writes(requests)[0]?.json()).toEqual({
        username: 'sam',
        displayName: 'Sam Office',
        role: 'operator',
        password: 'first password 1',
        schoolIds: [2],
      });
    });

    it('changes a user’s schools, and makes them organisation-wide again', async () => {
      const requests = recordRequests();
      withSchools();
      usersServer([staffUser(), { ...ana, schoolIds: [1] }]);
      const { user } = renderApp('/users');
      const row = await rowOf('ana');
      await user.click(within(row).getByRole('button', { name: 'Change schools of ana' }));
      const form = screen.getByRole('form', { name: 'Schools of ana' });
      const group = within(form).getByRole('group', { name: 'Schools' });
      expect(within(group).getByRole('radio', { name: 'Only these schools' })).toBeChecked();
      expect(within(group).getByRole('checkbox', { name: 'Northfield Academy' })).toBeChecked();
      await user.click(within(group).getByRole('checkbox', { name: 'Northfield Academy' }));
      await user.click(within(group).getByRole('checkbox', { name: 'Southgate Primary' }));
      await user.click(within(form).getByRole('button', { name: 'Save schools' }));
      expect(await screen.findByText('ana is limited to Southgate Primary.')).toBeInTheDocument();
      expect(screen.queryByRole('form', { name: 'Schools of ana' })).not.toBeInTheDocument();
      await waitFor(() => expect(within(row).getAllByRole('cell')[3]).toHaveTextContent('Southgate Primary'));

      await user.click(within(row).getByRole('button', { name: 'Change schools of ana' }));
      const again = screen.getByRole('form', { name: 'Schools of ana' });
      await user.click(within(again).getByRole('radio', { name: 'All schools' }));
      await user.click(within(again).getByRole('button', { name: 'Save schools' }));
      expect(await screen.findByText('ana sees every school.')).toBeInTheDocument();
      const sent = writes(requests);
      expect(await sent[0]?.json()).toEqual({ schoolIds: [2] });
      expect(await sent[1]?.json()).toEqual({ schoolIds: null });
    });

    it('does not offer to limit the only admin of every school', async () => {
      withSchools();
      // A second admin, but limited to a school: the first is still the only one of every school.
      usersServer([staffUser(), { ...ana, role: 'admin', schoolIds: [1] }]);
      renderApp('/users');
      const row = await rowOf('admin');
      expect(within(row).queryByRole('button', { name: 'Change schools of admin' })).not.toBeInTheDocument();
      expect(within(row).queryByRole('button', { name: 'Make admin an operator' })).not.toBeInTheDocument();
      expect(
        within(await rowOf('ana')).getByRole('button', { name: 'Change schools of ana' }),
      ).toBeInTheDocument();
    });
  });
});
