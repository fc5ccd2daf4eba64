import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { problem, session } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

const SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
const CODES = Array.from({ length: 10 }, (_, i) => `code${i}-abcde`);

/** The session's second factor as the server holds it, turned on by PUT with code 123456. */
function secondFactorServer(initial: { enabled: boolean; required: boolean }) {
  let state = initial;
  server.use(
    http.get('/api/session', () => HttpResponse.json(session({}, { secondFactor: state }))),
    http.post('/api/session/totp', async ({ request }) => {
      const { password } = (await request.json()) as { password: string };
      if (password !== 'correct horse battery') {
        const message = 'That is not your password.';
        return problemJson(problem(400, message, { errors: { password: message } }));
      }
      return HttpResponse.json({
        secret: SECRET,
        otpauthUrl: `otpauth://totp/School%20console:admin?secret=${SECRET}&issuer=School%20console`,
      });
    }),
    http.put('/api/session/totp', async ({ request }) => {
      const { code } = (await request.json()) as { code: string };
      if (code !== '123456') {
        const message = 'That is not the code the app shows now.';
        return problemJson(problem(400, message, { errors: { code: message } }));
      }
      state = { ...state, enabled: true };
      return HttpResponse.json({ recoveryCodes: CODES });
    }),
    http.delete('/api/session/totp', async ({ request }) => {
      const { password } = (await request.json()) as { password: string };
      if (password !== 'correct horse battery') {
        const message = 'That is not your password.';
        return problemJson(problem(400, message, { errors: { password: message } }));
      }
      state = { ...state, enabled: false };
      return new HttpResponse(null, { status: 204 });
    }),
  );
}

describe('Your second factor', () => {
  it('sets one up: a QR code and the key, a code from the app, then the recovery codes once', async () => {
    const requests = recordRequests();
    secondFactorServer({ enabled: false, required: false });
    const { user } = renderApp('/account');
    const section = await screen.findByRole('region', { name: 'Second factor' });
    expect(within(section).getByText('Off')).toBeInTheDocument();
    // The password first: a session alone cannot set one up.
    await user.type(within(section).getByLabelText('Your password, to set one up'), 'a guess');
    await user.click(within(section).getByRole('button', { name: 'Set up a second factor' }));
    expect(await within(section).findByText('That is not your password.')).toBeInTheDocument();
    await user.clear(within(section).getByLabelText('Your password, to set one up'));
    await user.type(within(section).getByLabelText('Your password, to set one up'), 'correct horse battery');
    await user.click(within(section).getByRole('button', { name: 'Set up a second factor' }));

    expect(
      await within(section).findByRole('img', { name: 'QR code for your authenticator app' }),
    ).toBeInTheDocument();
    expect(within(section).getByText('JBSW Y3DP EHPK 3PXP JBSW Y3DP EHPK 3PXP')).toBeInTheDocument();
    const code = within(section).getByLabelText('Code from the app');
    expect(code).toHaveFocus();
    await user.type(code, '000000');
    await user.click(within(section).getByRole('button', { name: 'Turn on' }));
    expect(await within(section).findByText('That is not the code the app shows now.')).toBeInTheDocument();

    await user.clear(code);
    await user.type(code, '123456');
    await user.click(within(section).getByRole('button', { name: 'Turn on' }));
    const list = await within(section).findByRole('list', { name: 'Recovery codes' });
    expect(
      within(list)
        .getAllByRole('listitem')
        .map((li) => li.textContent),
    ).toEqual(CODES);
    expect(within(section).getByText('Your second factor is on.')).toBeInTheDocument();
    await user.click(within(section).getByRole('button', { name: 'I have saved them' }));
    expect(within(section).queryByRole('list', { name: 'Recovery codes' })).not.toBeInTheDocument();
    expect(await within(section).findByText('On')).toBeInTheDocument();

    const puts = requests.filter((r) => r.method === 'PUT');
    expect(await puts[1]?.json()).toEqual({ code: '123456' });
  });

  it('asks the digits alone before sending', async () => {
    secondFactorServer({ enabled: false, required: false });
    const { user } = renderApp('/account');
    await user.type(await screen.findByLabelText('Your password, to set one up'), 'correct horse battery');
    await user.click(await screen.findByRole('button', { name: 'Set up a second factor' }));
    await user.type(await screen.findByLabelText('Code from the app'), '12ab');
    await user.click(screen.getByRole('button', { name: 'Turn on' }));
    expect(await screen.findByText('Enter the 6 digits your authenticator app shows.')).toBeInTheDocument();
  });

  it('turns it off with the password', async () => {
    secondFactorServer({ enabled: true, required: false });
    const { user } = renderApp('/account');
    const password = await screen.findByLabelText('Your password, to turn it off');
    await user.type(password, 'wrong one');
    await user.click(screen.getByRole('button', { name: 'Turn off the second factor' }));
    expect(await screen.findByText('That is not your password.')).toBeInTheDocument();
    await user.clear(password);
    await user.type(password, 'correct horse battery');
    await user.click(screen.getByRole('button', { name: 'Turn off the second factor' }));
    expect(
      await screen.findByText('Your second factor is off: your password alone logs you in.'),
    ).toBeInTheDocument();
    expect(await screen.findByRole('button', { name: 'Set up a second factor' })).toBeInTheDocument();
  });

  it('takes a user who must have one to the Account page, and lets them go on once it is on', async () => {
    secondFactorServer({ enabled: false, required: true });
    const { user, location } = renderApp('/history');
    expect(
      await screen.findByRole('heading', { name: 'Account and security', level: 1 }),
    ).toBeInTheDocument();
    expect(location().pathname).toBe('/account');
    expect(screen.getByRole('alert')).toHaveTextContent('Set up a second factor to go on.');
    await user.type(screen.getByLabelText('Your password, to set one up'), 'correct horse battery');
    await user.click(screen.getByRole('button', { name: 'Set up a second factor' }));
    await user.type(await screen.findByLabelText('Code from the app'), '123456');
    await user.click(screen.getByRole('button', { name: 'Turn on' }));
    await screen.findByRole('list', { name: 'Recovery codes' });
    // The codes stay up until saved, though the rest of the console is open now.
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
    await user.click(screen.getByRole('link', { name: 'History' }));
    await waitFor(() => expect(location().pathname).toBe('/history'));
  });

  it('goes to the Account page when the server asks for a second factor first', async () => {
    let required = false;
    server.use(
      http.get('/api/session', () =>
        HttpResponse.json(session({}, { secondFactor: { enabled: false, required } })),
      ),
      http.get('/api/calls', () => {
        required = true;
        return problemJson(problem(403, 'Set up a second factor first', { secondFactorSetupRequired: true }));
      }),
    );
    const { location } = renderApp('/history');
    await waitFor(() => expect(location().pathname).toBe('/account'));
  });

  it('tells a single sign-on user where their password and second factor are kept', async () => {
    server.use(
      http.get('/api/session', () => HttpResponse.json(session({}, { method: 'sso' }))),
      http.get('/api/session/login-options', () =>
        HttpResponse.json({ localLogin: true, sso: { label: 'Northside School' } }),
      ),
    );
    renderApp('/account');
    expect(
      await screen.findByText(
        /You log in with Northside School\. Your password and second factor are kept there/,
      ),
    ).toBeInTheDocument();
    expect(screen.queryByRole('region', { name: 'Second factor' })).not.toBeInTheDocument();
    expect(screen.queryByLabelText('Current password')).not.toBeInTheDocument();
  });
});
