import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiSession } from './accounts.js';
import { baseUrl, browserAvailable, browserSuite, logIn, screenshot } from './browser.js';
import { consolePages, openPage, type Seeded, seed } from './seed.js';

// Every page of the console at phone width (390 × 844): nothing wider than the screen. Long
// content (a SOAP sample, a raw request, a long user agent, long names) scrolls inside its own
// box or wraps; the page itself never scrolls sideways. A list is one card per row, so no badge
// is cut and every row's actions are on the screen without scrolling a table sideways.

const PHONE = { width: 390, height: 844 };

/** How far the page is wider than the window, and the elements sticking out (to say which). */
async function overflow(
  page: Page,
): Promise<{ scrollWidth: number; innerWidth: number; culprits: string[] }> {
  return page.evaluate(() => {
    const innerWidth = window.innerWidth;
    const scrollWidth = document.documentElement.scrollWidth;
    const culprits: string[] = [];
    if (scrollWidth > innerWidth) {
      for (const el of Array.from(document.querySelectorAll('body *'))) {
        const box = el.getBoundingClientRect();
        if (box.width === 0 || box.right <= innerWidth + 0.5) continue;
        // Inside a box that scrolls or clips within the window: not the page's overflow.
        let clipped = false;
        for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
          if (
            getComputedStyle(a).overflowX !== 'visible' &&
            a.getBoundingClientRect().right <= innerWidth + 0.5
          ) {
            clipped = true;
            break;
          }
        }
        if (!clipped && culprits.length < 5) {
          culprits.push(
            `<${el.tagName.toLowerCase()} class="${el.className}"> right edge ${Math.round(box.right)}px`,
          );
        }
      }
    }
    return { scrollWidth, innerWidth, culprits };
  });
}

/**
 * What is cut on the page as it stands: a badge whose text does not fit its box, and a badge or an
 * action (a button, a link drawn as one) that lies partly off the screen or outside a box that
 * clips or scrolls it (a table scrolled sideways hides its last columns until scrolled to).
 */
async function cut(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const describe = (el: Element) =>
      `${el.classList.contains('badge') ? 'badge' : 'action'} "${(el.textContent ?? '').trim().replace(/\s+/g, ' ')}"`;
    for (const el of Array.from(document.querySelectorAll('.badge, button, a.button'))) {
      const box = el.getBoundingClientRect();
      // Not shown (a closed menu, a folded panel).
      if (box.width === 0 || box.height === 0) continue;
      if (el.classList.contains('badge') && el.scrollWidth > el.clientWidth + 1) {
        found.push(`${describe(el)}: its text is ${el.scrollWidth}px in a ${el.clientWidth}px box`);
        continue;
      }
      if (box.left < -0.5 || box.right > window.innerWidth + 0.5) {
        found.push(`${describe(el)}: ${Math.round(box.left)}-${Math.round(box.right)}px, off the screen`);
        continue;
      }
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX === 'visible') continue;
        const clip = a.getBoundingClientRect();
        if (box.left < clip.left - 0.5 || box.right > clip.right + 0.5) {
          found.push(
            `${describe(el)}: ${Math.round(box.left)}-${Math.round(box.right)}px, outside its <${a.tagName.toLowerCase()} class="${a.className}"> (${Math.round(clip.left)}-${Math.round(clip.right)}px)`,
          );
          break;
        }
      }
    }
    return found;
  });
}

describe.skipIf(!browserAvailable())('the console at phone width, 390 × 844 (real server, Chromium)', () => {
  const suite = browserSuite('none');
  let ids: Seeded;

  beforeAll(async () => {
    ids = await seed(await apiSession(baseUrl()));
  });

  /**
   * Visits each page (its figures shown, where it has any) and collects every one wider than the
   * window, with what sticks out, and every badge or action cut.
   */
  async function check(page: Page, pages: [path: string, heading: string | RegExp][]): Promise<string[]> {
    const wide: string[] = [];
    for (const [path, heading] of pages) {
      await openPage(page, path, heading);
      for (const figures of await page.locator('details.figures > summary').all()) await figures.click();
      const { scrollWidth, innerWidth } = await overflow(page);
      expect(innerWidth).toBe(PHONE.width);
      if (scrollWidth > innerWidth) {
        const { culprits } = await overflow(page);
        wide.push(`${path}: ${scrollWidth}px wide; ${culprits.join('; ')}`);
      }
      for (const what of await cut(page)) wide.push(`${path}: ${what}`);
      await screenshot(page, `phone${path.replace(/\W+/g, '-')}`);
    }
    return wide;
  }

  it('fits every page of someone logged in into the width of the screen, no badge or action cut', async () => {
    const { page } = await suite.open();
    await page.setViewportSize(PHONE);
    await logIn(page);
    const wide = await check(page, consolePages(ids));

    // The links fold behind one button naming the page; opened, the whole menu is on the screen,
    // and the user menu opens within it too.
    const nav = page.getByRole('navigation', { name: 'Main' });
    const navBox = await nav.boundingBox();
    expect(navBox?.height, 'the folded menu is one row').toBeLessThan(60);
    await nav.getByRole('button', { name: /^Menu/ }).click();
    for (const link of await nav.getByRole('link').all()) {
      const box = await link.boundingBox();
      expect(box && box.x >= 0 && box.x + box.width <= PHONE.width, (await link.textContent()) ?? '').toBe(
        true,
      );
    }
    await page.getByRole('button', { name: /Admin$/ }).click();
    await page.getByRole('group', { name: 'Show times in' }).waitFor();
    const menu = await overflow(page);
    if (menu.scrollWidth > menu.innerWidth) wide.push(`the open user menu: ${menu.culprits.join('; ')}`);

    expect(wide, 'pages wider than the screen, badges and actions cut').toEqual([]);
  });

  it('fits the login and setup pages into the width of the screen', async () => {
    const { page } = await suite.open();
    await page.setViewportSize(PHONE);
    const wide = await check(page, [
      ['/login', 'Log in'],
      ['/setup', 'Set up the console'],
    ]);
    expect(wide, 'pages wider than the screen').toEqual([]);
  });
});
