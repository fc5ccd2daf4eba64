import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Account, ADMIN } from './accounts.js';
import { baseUrl, browserAvailable, browserSuite, logIn, screenshot } from './browser.js';

// Staff accounts end to end: the login page, the Content-Security-Policy every page is served
// with, an admin adding an operator, what an operator may open, and logging out.

/** The policy the console is served with: everything from this origin, nothing inline. */
const CSP_DIRECTIVES = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
];

/** Every page of the console, with its heading, as an admin sees them. */
const ADMIN_PAGES: [path: string, heading: string][] = [
  ['/send', 'Send'],
  ['/history', 'History'],
  ['/deliveries', 'Deliveries'],
  ['/dashboard', 'Dashboard'],
  ['/books', 'Books'],
  ['/schools', 'Schools'],
  ['/templates', 'Templates'],
  ['/users', 'Users'],
  ['/audit', 'Audit'],
  ['/service', 'Service'],
  ['/account', 'Account and security'],
];

const navLinks = (page: Page) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link').allInnerTexts();

/**
 * What the console says of the Content-Security-Policy, whatever the level. (The violations
 * themselves are reported by every page of every test, browser.ts.)
 */
function watchCspMessages(page: Page): string[] {
  const messages: string[] = [];
  page.on('console', (message) => {
    const text = message.text();
    if (/Content Security Policy|Refused to (load|apply|execute|evaluate|connect|frame)/i.test(text)) {
      messages.push(`${message.type()}: ${text}`);
    }
  });
  return messages;
}

function expectStrictCsp(header: string | undefined): void {
  expect(header, 'Content-Security-Policy header').toBeDefined();
  const directives = (header ?? '').split(';').map((d) => d.trim());
  for (const directive of CSP_DIRECTIVES) expect(directives).toContain(directive);
  expect(header).not.toContain('unsafe-inline');
  expect(header).not.toContain('unsafe-eval');
}

describe.skipIf(!browserAvailable())('staff accounts (real server, Chromium)', () => {
  const suite = browserSuite('fresh');
  let csp: string[];

  beforeEach(async () => {
    csp = watchCspMessages(suite.session.page);
  });
  // The console's CSP messages join the page's problems, which the suite's check expects to be
  // none (after-hooks run last-registered first: this one sees the page still open).
  afterEach(() => {
    suite.session.problems.push(...csp.map((text) => `CSP message: ${text}`));
  });

  it('refuses a wrong password with a message, then logs in and lands on the Dashboard', async () => {
    const { page } = suite.session;
    const response = await page.goto('/');
    expectStrictCsp(response?.headers()['content-security-policy']);
    // Not logged in: the console shows its login page, whatever was asked for.
    await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);

    await page.getByLabel('Username', { exact: true }).fill(ADMIN.username);
    await page.getByLabel('Password', { exact: true }).fill('not the password');
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'Wrong username or password.' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/login');
    await screenshot(page, 'login-wrong-password');

    await page.getByLabel('Password', { exact: true }).fill(ADMIN.password);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard');
    await page.getByRole('button', { name: /^admin\s+Admin$/ }).waitFor();
  });

  it('comes back to the page asked for after logging in', async () => {
    const { page } = suite.session;
    await page.goto('/deliveries?status=dead');
    await page.waitForURL((url) => url.pathname === '/login');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/deliveries?status=dead');
    await page.getByLabel('Username', { exact: true }).fill(ADMIN.username);
    await page.getByLabel('Password', { exact: true }).fill(ADMIN.password);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { name: 'Deliveries', level: 1 }).waitFor();
    expect(new URL(page.url()).search).toBe('?status=dead');
    expect(await page.getByLabel('Status', { exact: true }).inputValue()).toBe('dead');
  });

  it('serves every page with the strict policy, and nothing on them breaks it', async () => {
    const { page } = suite.session;
    await logIn(page);
    for (const [path, heading] of ADMIN_PAGES) {
      // A fresh load of each address, as from a bookmark: the document's own headers.
      const response = await page.goto(path);
      expectStrictCsp(response?.headers()['content-security-policy']);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      // Let the page settle (its requests, lazy code and styles) before the next.
      await page.waitForLoadState('networkidle');
    }
    // The same pages reached inside the app, as people move around.
    await page.goto('/send');
    for (const [, heading] of ADMIN_PAGES.filter(([path]) => path !== '/account')) {
      await page
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: heading, exact: true })
        .click();
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
    }

    // The page itself has nothing inline the policy would block.
    const html = await (await fetch(`${baseUrl()}/send`)).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(html).not.toMatch(/<style\b/i);
    expect(html).not.toMatch(/\sstyle=/i);
    expect(html).not.toMatch(/\son[a-z]+=/i);
  });

  it('lets an admin add an operator, who sees only the pages an operator may use', async () => {
    const { page } = suite.session;
    const operator: Account = {
      username: `op-${randomBytes(3).toString('hex')}`,
      password: `operator-${randomBytes(6).toString('hex')}`,
    };
    await logIn(page);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click();
    await page.getByRole('heading', { name: 'Users', level: 1 }).waitFor();
    const form = page.getByRole('form', { name: 'Add a user' });
    await form.getByLabel('Username', { exact: true }).fill(operator.username);
    await form.getByLabel('Display name', { exact: true }).fill('Olivia Operator');
    await form.getByLabel('Role', { exact: true }).selectOption('operator');
    await form.getByLabel('Initial password', { exact: true }).fill(operator.password);
    await form.getByRole('button', { name: 'Add user' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Added ${operator.username} (Operator, All schools).` })
      .waitFor();
    const row = page
      .getByRole('table', { name: 'Staff accounts' })
      .getByRole('row')
      .filter({ hasText: operator.username });
    await row.getByText('Never').waitFor();
    await screenshot(page, 'users-operator-added');

    // The audit log says who added whom.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit' }).click();
    const entry = page
      .getByRole('table', { name: 'Audit log, newest first' })
      .getByRole('row')
      .filter({ hasText: 'Added a user' })
      .filter({ hasText: operator.username });
    await entry.first().waitFor();

    // Log out, then in as the operator.
    await page.getByRole('button', { name: /^admin\s+Admin$/ }).click();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
    await logIn(page, operator);
    expect(new URL(page.url()).pathname).toBe('/dashboard');
    // Audit: the entries of their own actions.
    expect(await navLinks(page)).toEqual(['Dashboard', 'Send', 'History', 'Deliveries', 'Audit', 'Service']);
    await page.getByRole('button', { name: /^Olivia Operator\s+Operator$/ }).waitFor();

    // Opening an admin page directly: the console says it is not for them.
    await page.goto('/users');
    await page.getByRole('heading', { name: 'You cannot open this page', level: 1 }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'This page is for admins only.' }).waitFor();
    await screenshot(page, 'operator-forbidden');
    // And the API refuses them too, whatever the console shows.
    const users = await page.request.get('/api/users');
    expect(users.status()).toBe(403);
  });

  it('ends the session on the server when logging out', async () => {
    const { page, context } = suite.session;
    await logIn(page);
    const cookie = (await context.cookies()).find((c) => /^(__Host-)?session$/.test(c.name));
    expect(cookie?.httpOnly).toBe(true);
    const asBefore = { headers: { cookie: `${cookie?.name}=${cookie?.value}` } };
    expect((await fetch(`${baseUrl()}/api/session`, asBefore)).status).toBe(200);

    await page.getByRole('button', { name: /^admin\s+Admin$/ }).click();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in', level: 1 }).waitFor();
    expect(`${new URL(page.url()).pathname}${new URL(page.url()).search}`).toBe('/login');

    // The old cookie no longer works, even replayed by another client.
    expect((await fetch(`${baseUrl()}/api/session`, asBefore)).status).toBe(401);
    expect((await fetch(`${baseUrl()}/api/calls`, asBefore)).status).toBe(401);
    // And the browser is logged out: any page leads to the login page.
    await page.goto('/history');
    await page.waitForURL((url) => url.pathname === '/login');
  });
});
