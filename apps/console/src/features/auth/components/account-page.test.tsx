import { CSRF_HEADER, ROLE_LABELS } from '@school/contract';
import { screen } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { problem } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

async function change(
  user: ReturnType<typeof renderApp>['user'],
  current: string,
  next: string,
  confirm = next,
) {
  await user.type(await screen.findByLabelText('Current password'), current);
  await user.type(screen.getByLabelText('New password'), next);
  await user.type(screen.getByLabelText('Confirm new password'), confirm);
  await user.click(screen.getByRole('button', { name: 'Change password' }));
}

describe('Account and security', () => {
  it('shows who is logged in and changes their password', async () => {
    const requests = recordRequests();
    server.use(http.put('/api/session/password', () => new HttpResponse(null, { status: 204 })));
    const { user } = renderApp('/account');
    expect(
      await screen.findByRole('heading', { name: 'Account and security', level: 1 }),
    ).toBeInTheDocument();
    expect(screen.getAllByRole('definition').map((dd) => dd.textContent)).toEqual([
      'Alex Admin',
      'admin',
      ROLE_LABELS.admin,
    ]);
    await change(user, 'old password 1', 'a new long password');

    expect(
      await screen.findByText(
        'Your password is changed. You stay logged in here; your other sessions have ended.',
      ),
    ).toBeInTheDocument();
    const put = requests.find((r) => r.method === 'PUT');
    expect(new URL(put?.url ?? '').pathname).toBe('/api/session/password');
    expect(put?.headers.get(CSRF_HEADER)).toBe('school-console');
    expect(await put?.json()).toEqual({
      currentPassword: 'old password 1',
      newPassword: 'a new long password',
    });
    expect(screen.getByLabelText('Current password')).toHaveValue('');
  });

  it('checks the new password before sending: long enough, typed twice the same', async () => {
    const requests = recordRequests();
    const { user } = renderApp('/account');
    await change(user, 'old password 1', 'short', 'shorter');
    expect(await screen.findByText('Use at least 10 characters.')).toBeInTheDocument();
    expect(screen.getByText('The two passwords are not the same.')).toBeInTheDocument();
    expect(requests.filter((r) => r.method === 'PUT')).toHaveLength(0);
  });

  it('says why it was refused below the form, or only under the field the server names', async () => {
    let answer = problem(500, 'The store could not be reached.');
    server.use(http.put('/api/session/password', () => problemJson(answer)));
    const { user } = renderApp('/account');
    await change(user, 'old password 1', 'a new long password');
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'Not changed: The store could not be reached. (HTTP 500)',
    );

    answer = problem(400, 'The current password is wrong.', {
      errors: { currentPassword: 'This is not your current password.' },
    });
    await user.click(screen.getByRole('button', { name: 'Change password' }));
    expect(await screen.findByText('This is not your current password.')).toBeInTheDocument();
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('puts the server’s message under the current password when it is wrong', async () => {
    server.use(
      http.put('/api/session/password', () =>
        problemJson(
          problem(400, 'The current password is wrong.', {
            errors: { currentPassword: 'This is not your current password.' },
          }),
        ),
      ),
    );
    const { user } = renderApp('/account');
    await change(user, 'a wrong one', 'a new long password');
    const current = screen.getByLabelText('Current password');
    expect(await screen.findByText('This is not your current password.')).toBeInTheDocument();
    expect(current).toHaveAttribute('aria-invalid', 'true');
    expect(current).toHaveAccessibleDescription('This is not your current password.');
    expect(current).toHaveFocus();
  });
});
