import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { AxeResults, Result, RunOptions } from 'axe-core';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiSession } from './accounts.js';
import { baseUrl, browserAvailable, browserSuite, screenshot } from './browser.js';
import { consolePages, openPage, type Seeded, seed } from './seed.js';

// Every page of the console checked by axe-core against WCAG 2.1 A and AA, at a desktop's width
// and a phone's, logged in as the admin, with the data phone-width.e2e.ts makes long. Any
// violation fails the test, with its rule, its impact and where it is.

const WIDTHS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

/**
 * Why axe left a text's contrast to review that is no doubt about it: a glyph (the menus' ▾) or a
 * figure of one character, which it never judges. Any other reason (the text under another
 * element, as in a table scrolled sideways) is a contrast nobody checked, and fails the test.
 */
const NEVER_JUDGED = new Set(['nonBmp', 'shortTextContent']);

// axe's script is run through DevTools (page.evaluate), not added to the page: the console's
// Content-Security-Policy allows no inline script, and is checked as it ships.
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** A rule's finding as a line: rule, impact, what it asks, and the selectors of where it is. */
const describeResult = (r: Result, nodes = r.nodes): string =>
  `${r.id} (${r.impact ?? 'no impact'}): ${r.help}; at ${nodes.map((n) => n.target.join(' ')).join(', ')}`;

/** The page's violations, and the contrasts axe could not check that it should have. */
async function findings(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const options: RunOptions = {
    runOnly: { type: 'tag', values: WCAG_21_AA },
    resultTypes: ['violations', 'incomplete'],
  };
  const results = await page.evaluate(
    (options) => (window as unknown as { axe: { run(o: RunOptions): Promise<AxeResults> } }).axe.run(options),
    options,
  );
  const found = results.violations.map((v) => describeResult(v));
  for (const r of results.incomplete.filter((r) => r.id === 'color-contrast')) {
    const unchecked = r.nodes.filter((n) => {
      const key = (n.any[0]?.data as { messageKey?: string } | undefined)?.messageKey;
      return !NEVER_JUDGED.has(key ?? '');
    });
    if (unchecked.length > 0) found.push(`not checked, ${describeResult(r, unchecked)}`);
  }
  return found;
}

describe.skipIf(!browserAvailable())(
  'accessibility: axe-core, WCAG 2.1 A and AA (real server, Chromium)',
  () => {
    const suite = browserSuite('logged-in');
    let ids: Seeded;

    beforeAll(async () => {
      ids = await seed(await apiSession(baseUrl()));
    });

    for (const size of WIDTHS) {
      it(`finds no violation on any page of the console, ${size.width} px wide`, async () => {
        const { page } = suite.session;
        await page.setViewportSize(size);
        const found: string[] = [];
        for (const [path, heading] of consolePages(ids)) {
          await openPage(page, path, heading);
          // The Dashboard's figures tables are checked too: they are built when opened.
          for (const figures of await page.locator('details.figures > summary').all()) await figures.click();
          for (const finding of await findings(page)) found.push(`${path}: ${finding}`);
        }
        if (found.length > 0) await screenshot(page, `axe-${size.name}`);
        expect(found, 'WCAG 2.1 A/AA violations').toEqual([]);
      });
    }
  },
);
