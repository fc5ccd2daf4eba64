import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, inject } from 'vitest';
import { type Account, ADMIN } from './accounts.js';

/** Whether the suite has a browser and a server (global-setup.ts skips them, loudly, outside CI). */
export const browserAvailable = (): boolean => inject('chromium') !== '';

/** Debian's Chromium, headless, with the flags this machine needs (no background networking). */
export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: inject('chromium'),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

export interface Session {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Uncaught errors, console errors and CSP violations of the page so far: a test expects none. */
  readonly problems: string[];
  /** What the Content-Security-Policy blocked so far (also in `problems`). */
  readonly cspViolations: string[];
}

/**
 * A fresh context (no cookies, storage or cache shared with other tests) on the suite's server,
 * with one page. Waits are bounded well inside the test's timeout, so a failure names the step.
 */
export async function openSession(browser: Browser, base: string = baseUrl()): Promise<Session> {
  const context = await browser.newContext({
    baseURL: base,
    acceptDownloads: true,
    viewport: { width: 1280, height: 900 },
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  context.setDefaultTimeout(15_000);
  context.setDefaultNavigationTimeout(20_000);
  const problems: string[] = [];
  const cspViolations: string[] = [];
  // Chromium reports some violations (a blocked eval) only as an event and a DevTools issue, not
  // in the console: each document reports its own through a binding, which outlives navigations.
  // (Bindings and init scripts come from the browser, not the page: the policy does not apply.)
  await context.exposeBinding('__reportCspViolation', (_source, text: string) => {
    cspViolations.push(text);
    problems.push(`CSP violation: ${text}`);
  });
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      const report = (window as unknown as { __reportCspViolation: (text: string) => void })
        .__reportCspViolation;
      report(
        `${event.effectiveDirective} blocked ${event.blockedURI || 'inline'} in ${event.sourceFile}:${event.lineNumber}`,
      );
    });
  });
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !expectedRefusal(message.text(), message.location().url)) {
      problems.push(`console error: ${message.text()}`);
    }
  });
  return { context, page, problems, cspViolations };
}

/**
 * Chromium logs every 4xx as a console error. Some are answers, not faults: a 401 from
 * /api/session ("nobody is logged in" before logging in, "wrong username, password or code"), and
 * a 400 from /api/session/totp (not the code the app shows).
 */
function expectedRefusal(text: string, url: string): boolean {
  const status = /^Failed to load resource: the server responded with a status of (\d+)/.exec(text)?.[1];
  const pathname = URL.canParse(url) ? new URL(url).pathname : '';
  return (
    (status === '401' && pathname === '/api/session') ||
    (status === '400' && pathname === '/api/session/totp')
  );
}

/**
 * Logs in through the login page, as staff do, and waits for the console behind it. With `next`,
 * the page to come back to (the login page's `?next=`).
 */
export async function logIn(page: Page, account: Account = ADMIN, next?: string): Promise<void> {
  await page.goto(next ? `/login?next=${encodeURIComponent(next)}` : '/login');
  await page.getByLabel('Username', { exact: true }).fill(account.username);
  await page.getByLabel('Password', { exact: true }).fill(account.password);
  await page.getByRole('button', { name: 'Log in', exact: true }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

export interface BrowserSuite {
  /** The suite's Chromium. */
  readonly browser: Browser;
  /** The test's session (opened before each test, or by `open`). */
  readonly session: Session;
  /** Opens the test's session on `base` (default: the suite's server); it is checked and closed after the test. */
  open(base?: string): Promise<Session>;
}

/**
 * The set-up every browser suite shares, registered in the calling `describe`: Chromium for the
 * suite, and after each test its session's problems (uncaught errors, console errors, CSP
 * violations) expected to be none, a screenshot kept when the test failed, and the session closed.
 * `each`: open a session before each test, logged in as the admin or not; `none`: tests call
 * `open()` themselves (another server, or no session at all).
 */
export function browserSuite(each: 'logged-in' | 'fresh' | 'none'): BrowserSuite {
  let browser: Browser | undefined;
  let current: Session | undefined;
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
  });
  if (each !== 'none') {
    beforeEach(async () => {
      const session = await suite.open();
      if (each === 'logged-in') await logIn(session.page);
    });
  }
  afterEach(async ({ task }) => {
    const session = current;
    current = undefined;
    if (!session) return;
    // What the page reported while the test ran (not while its context closes).
    const problems = [...session.problems];
    if (task.result?.state === 'fail') {
      await screenshot(session.page, `FAILED-${task.name.replace(/\W+/g, '-')}`).catch(() => {});
    }
    await session.context.close();
    expect(problems, 'errors in the page').toEqual([]);
  });
  const suite: BrowserSuite = {
    get browser() {
      if (!browser) throw new Error('The browser starts in beforeAll.');
      return browser;
    },
    get session() {
      if (!current) throw new Error('No session is open in this test.');
      return current;
    },
    async open(base) {
      current = await openSession(suite.browser, base);
      return current;
    },
  };
  return suite;
}

/** Keeps a screenshot of the page as a test artefact (e2e/test-results). */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(inject('artifactsDir'), `${name}.png`), fullPage: true });
}

export const baseUrl = (): string => inject('baseUrl');
