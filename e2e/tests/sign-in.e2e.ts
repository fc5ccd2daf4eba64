import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startIdentityProvider,
  type TestIdentityProvider,
} from '../../apps/server/test/identity-provider.js';
import { type Account, apiSession } from './accounts.js';
import { authenticatorCode } from './authenticator.js';
import { baseUrl, browserAvailable, browserSuite, logIn, screenshot } from './browser.js';
import { freePort, type ServerProcess, startServerProcess } from './server-process.js';

// Staff log in as the school's IT has them: with the school account, through its identity
// provider (a real OpenID Connect provider with a sign-in form), or with a password and a code
// from an authenticator app.

const navLinks = (page: Page) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link').allInnerTexts();

/** The page is no wider than its window (staff on a phone). */
async function fitsTheScreen(page: Page): Promise<void> {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
}

describe.skipIf(!browserAvailable())('signing in (real server, identity provider, Chromium)', () => {
  const suite = browserSuite('none');

  describe('with the school account', () => {
    let idp: TestIdentityProvider;
    let server: ServerProcess | undefined;
    /** The console as staff reach it; `localhost`, so its cookies and the provider's stay apart. */
    let consoleUrl = '';

    beforeAll(async () => {
      const port = await freePort();
      consoleUrl = `http://localhost:${port}`;
      idp = await startIdentityProvider({
        redirectUri: `${consoleUrl}/api/session/oidc/callback`,
        accounts: {
          ada: { name: 'Ada Admin', email: 'ada@school.example', groups: ['staff', 'it-admins'] },
          otto: { name: 'Otto Operator', email: 'otto@school.example', groups: ['office'] },
          pat: { name: 'Pat Pupil', email: 'pat@school.example', groups: ['pupils'] },
        },
      });
      server = await startServerProcess(
        {
          PUBLIC_BASE_URL: consoleUrl,
          OIDC_ISSUER: idp.issuer,
          OIDC_CLIENT_ID: idp.clientId,
          OIDC_CLIENT_SECRET: idp.clientSecret,
          OIDC_LABEL: 'Test School',
          OIDC_SCOPES: 'groups',
          OIDC_ADMIN_GROUPS: 'it-admins',
          OIDC_OPERATOR_GROUPS: 'office',
        },
        { port, name: 'sso' },
      );
    });
    afterAll(async () => {
      await server?.stop();
      await idp?.close();
    });

    /** From the console's login page, through the provider's sign-in form, as `login`. */
    async function signIn(page: Page, login: string, next?: string): Promise<void> {
      await page.goto(next ? `/login?next=${encodeURIComponent(next)}` : '/login');
      await page.getByRole('link', { name: 'Log in with Test School' }).click();
      await page.getByRole('heading', { name: 'Test school sign-in' }).waitFor();
      await page.getByLabel('School username').fill(login);
      await page.getByRole('button', { name: 'Sign in' }).click();
    }

    it('logs an admin in through the provider, the role from its groups, back on the page asked for', async () => {
      const { page } = await suite.open(consoleUrl);
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto('/login');
      await page.getByText('or with a username and password').waitFor();
      await fitsTheScreen(page);
      await screenshot(page, 'login-with-school-account');

      await page.setViewportSize({ width: 1280, height: 900 });
      await signIn(page, 'ada', '/audit');
      await page.getByRole('heading', { name: 'Audit', level: 1 }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/audit');
      expect(await navLinks(page)).toContain('Users');
      await page.getByRole('button', { name: /^Ada Admin\s+Admin$/ }).waitFor();
      // Her login is in the audit log, made by single sign-on.
      await page
        .getByRole('table', { name: 'Audit log, newest first' })
        .getByRole('row')
        .filter({ hasText: 'ada@school.example' })
        .first()
        .waitFor();

      // Her account page says where her password lives: not here.
      await page.goto('/account');
      await page.getByText('You log in with Test School').waitFor();
      expect(await page.getByRole('button', { name: 'Set up a second factor' }).count()).toBe(0);
      await screenshot(page, 'account-single-sign-on');
    });

    it('gives an operator of the office group only the pages an operator may use', async () => {
      const { page } = await suite.open(consoleUrl);
      await signIn(page, 'otto');
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
      expect(await navLinks(page)).toEqual([
        'Dashboard',
        'Send',
        'History',
        'Deliveries',
        'Audit',
        'Service',
      ]);
      await page.getByRole('button', { name: /^Otto Operator\s+Operator$/ }).waitFor();
    });

    it('refuses someone in no staff group, and says why on the login page', async () => {
      const { page } = await suite.open(consoleUrl);
      await signIn(page, 'pat');
      await page
        .getByRole('alert')
        .filter({ hasText: 'Your school account is not allowed to use this console' })
        .waitFor();
      expect(new URL(page.url()).pathname).toBe('/login');
      expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
      const me = await page.request.get('/api/session');
      expect(me.status()).toBe(401);
      // The refused one has no account: an admin sees only the two let in.
      const api = await apiSession(consoleUrl);
      const users = (await (await api.fetch('/api/users')).json()) as { items: { username: string }[] };
      expect(users.items.map((u) => u.username).sort()).toEqual(
        ['ada@school.example', 'admin', 'otto@school.example'].sort(),
      );
    });
  });

  describe('with a password and a second factor', () => {
    it('sets up an authenticator on the Account page; logins then ask for its code, or a recovery code', async () => {
      const admin = await apiSession(baseUrl());
      const account: Account = {
        username: `totp-${randomBytes(3).toString('hex')}`,
        password: `second-factor-${randomBytes(6).toString('hex')}`,
      };
      const created = await admin.fetch('/api/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...account, displayName: 'Tess Totp', role: 'operator' }),
      });
      expect(created.status).toBe(201);

      const { page } = await suite.open();
      await page.setViewportSize({ width: 390, height: 844 });
      await logIn(page, account, '/account');
      await page.getByLabel('Your password, to set one up').fill(account.password);
      await page.getByRole('button', { name: 'Set up a second factor' }).click();
      await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
      const key = ((await page.locator('.totp-secret').textContent()) ?? '').replace(/\s/g, '');
      expect(key).toMatch(/^[A-Z2-7]{32}$/);
      await fitsTheScreen(page);
      await screenshot(page, 'second-factor-enrol');

      // A wrong code is refused; the app's code turns it on and shows the recovery codes once.
      const form = page.getByRole('form', { name: 'Turn on the second factor' });
      await form
        .getByLabel('Code from the app')
        .fill('000000' === authenticatorCode(key) ? '111111' : '000000');
      await form.getByRole('button', { name: 'Turn on' }).click();
      await page
        .getByText(/not the code/i)
        .first()
        .waitFor();
      const enrolledAt = Date.now();
      await form.getByLabel('Code from the app').fill(authenticatorCode(key, enrolledAt));
      await form.getByRole('button', { name: 'Turn on' }).click();
      const list = page.getByRole('list', { name: 'Recovery codes' });
      await list.getByRole('listitem').first().waitFor();
      const codes = await list.getByRole('listitem').allInnerTexts();
      expect(codes).toHaveLength(10);
      await fitsTheScreen(page);
      await screenshot(page, 'second-factor-recovery-codes');
      await page.getByRole('button', { name: 'I have saved them' }).click();
      await page.getByText('Each login asks for a code from your authenticator app').waitFor();

      // Log out; the password alone is not enough now.
      await page.getByRole('button', { name: /^Tess Totp\s+Operator$/ }).click();
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
      const codeStep = async () => {
        await page.getByLabel('Username', { exact: true }).fill(account.username);
        await page.getByLabel('Password', { exact: true }).fill(account.password);
        await page.getByRole('button', { name: 'Log in', exact: true }).click();
        await page.getByRole('form', { name: 'Second factor' }).waitFor();
      };
      await codeStep();
      await fitsTheScreen(page);
      await screenshot(page, 'login-second-factor');
      // The code used to turn it on does not log in a second time.
      await page.getByLabel('Code', { exact: true }).fill(authenticatorCode(key, enrolledAt));
      await page.getByRole('button', { name: 'Log in', exact: true }).click();
      await page.getByRole('alert').waitFor();
      // A recovery code does, once.
      await page.getByLabel('Code', { exact: true }).fill(codes[0] as string);
      await page.getByRole('button', { name: 'Log in', exact: true }).click();
      await page.getByRole('navigation', { name: 'Main' }).waitFor();

      await page.getByRole('button', { name: /^Tess Totp\s+Operator$/ }).click();
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
      await codeStep();
      // The app's next code (a clock a step ahead is allowed) logs in.
      await page.getByLabel('Code', { exact: true }).fill(authenticatorCode(key, enrolledAt + 30_000));
      await page.getByRole('button', { name: 'Log in', exact: true }).click();
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
    });
  });
});
