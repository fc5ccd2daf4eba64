import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { inject } from 'vitest';

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

/** Keeps a screenshot of the page as a test artefact (e2e/test-results). */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(inject('artifactsDir'), `${name}.png`), fullPage: true });
}

export const baseUrl = (): string => inject('baseUrl');
