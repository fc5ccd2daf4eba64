import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { inject } from 'vitest';

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
  /** Uncaught errors and console errors of the page so far: a test expects none. */
  readonly problems: string[];
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
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  return { context, page, problems };
}

/** Keeps a screenshot of the page as a test artefact (e2e/test-results). */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(inject('artifactsDir'), `${name}.png`), fullPage: true });
}

export const baseUrl = (): string => inject('baseUrl');
