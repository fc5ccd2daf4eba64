import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Account, apiSession } from './accounts.js';
import { baseUrl, browserAvailable, browserSuite, logIn, screenshot } from './browser.js';
import { consolePages, marker, openPage, type Seeded, seed } from './seed.js';

// Every page of the console at phone width (390 × 844): nothing wider than the screen. Long
// content (a SOAP sample, a raw request, a long user agent, long names) scrolls inside its own
// box or wraps; the page itself never scrolls sideways. A list is one card per row, so no badge
// is cut and every row's actions are on the screen without scrolling a table sideways. A text cut
// short with an ellipsis has its whole text in a title, and the Test mode band is one line. With a
// long display name, an admin's links stay on one row at 1280 px and the name is readable whole.

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

/** A name long enough to be cut in the header, as staff met it. */
const LONG_NAME = 'Olivia Operator-Montgomery-Fitzwilliam';

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
    // A text cut short with an ellipsis is readable whole in its title.
    for (const el of Array.from(document.querySelectorAll('body *'))) {
      if (getComputedStyle(el).textOverflow !== 'ellipsis' || el.scrollWidth <= el.clientWidth + 1) continue;
      const text = (el.textContent ?? '').trim();
      if (el.getAttribute('title') !== text) found.push(`"${text}" cut short, and no title gives it whole`);
    }
    // A select shows its current choice whole (the open list is the browser's own, and whole).
    const measure = document.createElement('canvas').getContext('2d');
    for (const select of Array.from(document.querySelectorAll('select'))) {
      const choice = select.selectedOptions[0]?.text ?? '';
      const style = getComputedStyle(select);
      if (!measure || select.getBoundingClientRect().width === 0) continue;
      measure.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      // The arrow takes about 1.25rem of the box beside the padding.
      const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
      if (measure.measureText(choice).width > room)
        found.push(`the choice "${choice}" is cut in its ${select.clientWidth}px select`);
    }
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

/** How many lines the Test mode band's text takes (0 when there is no band). */
async function testModeLines(page: Page): Promise<number> {
  const band = page.getByRole('complementary', { name: 'Test mode' }).locator('p');
  if ((await band.count()) === 0) return 0;
  return band.evaluate((p) =>
    Math.round(p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).lineHeight)),
  );
}

/** The distinct top edges of the main navigation's links: one when they are on one row. */
async function navRows(page: Page): Promise<number[]> {
  const tops = await page
    .getByRole('navigation', { name: 'Main' })
    .getByRole('link')
    .evaluateAll((links) => links.map((a) => Math.round(a.getBoundingClientRect().top)));
  return [...new Set(tops)];
}

/**
 * Where the logged-in person's name can be read whole: the header's button shows it whole or gives
 * it whole in its title, and the open user menu shows it whole, uncut and on the screen.
 */
async function nameReadable(page: Page, name: string): Promise<string[]> {
  const problems: string[] = [];
  const button = page.getByRole('button', { name: new RegExp(`^${name}`) });
  const shown = await button.locator('.user-name').evaluate((el) => ({
    cut: el.scrollWidth > el.clientWidth + 1,
    title: el.getAttribute('title'),
  }));
  if (shown.cut && shown.title !== name)
    problems.push(`the header cuts the name, with the title ${shown.title}`);
  await button.click();
  const whole = page.locator('.user-menu-panel').getByText(name, { exact: true });
  if ((await whole.count()) === 0) problems.push('the open user menu does not give the name whole');
  else {
    const box = await whole.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { left: r.left, right: r.right, cut: el.scrollWidth > el.clientWidth + 1 };
    });
    if (box.cut || box.left < 0 || box.right > (page.viewportSize()?.width ?? 0))
      problems.push(`the open user menu cuts the name (${Math.round(box.left)}-${Math.round(box.right)}px)`);
  }
  await page.keyboard.press('Escape');
  return problems;
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
      const lines = await testModeLines(page);
      if (lines > 1) wide.push(`${path}: the Test mode band takes ${lines} lines`);
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

  it("names a call's school whole on its page at 390 px, wrapped within the screen", async () => {
    const { page } = await suite.open();
    await page.setViewportSize(PHONE);
    await logIn(page);
    await openPage(page, `/history/${ids.schoolCallId}`, `Call #${ids.schoolCallId}`);
    const school = page
      .locator('dl.summary dt', { hasText: /^School$/ })
      .locator('xpath=following-sibling::dd[1]');
    expect(await school.textContent()).toBe(ids.schoolName);
    const box = await school.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { left: r.left, right: r.right, cut: el.scrollWidth > el.clientWidth + 1 };
    });
    expect(box.left).toBeGreaterThanOrEqual(0);
    expect(box.right).toBeLessThanOrEqual(PHONE.width);
    expect(box.cut, 'the name cut short').toBe(false);
    await screenshot(page, 'phone-call-school');
  });

  it("shows every filter's longest choice whole once chosen, at 1280 and 390 px", async () => {
    const { page } = await suite.open();
    await logIn(page);
    const problems: string[] = [];
    for (const size of [DESKTOP, PHONE]) {
      await page.setViewportSize(size);
      for (const [path, heading] of [
        ['/history', 'History'],
        ['/deliveries', 'Deliveries'],
      ] as const) {
        await openPage(page, path, heading);
        const toggle = page.locator('.filters-toggle');
        if (await toggle.isVisible()) await toggle.click();
        for (const select of await page.locator('.filters select').all()) {
          const longest = await select.evaluate(
            (el: HTMLSelectElement) =>
              Array.from(el.options).reduce((a, b) => (b.text.length > a.text.length ? b : a)).value,
          );
          await select.selectOption(longest);
        }
        for (const what of await cut(page)) problems.push(`${size.width}px ${path}: ${what}`);
      }
    }
    expect(problems).toEqual([]);
  });

  describe('with a long display name', () => {
    let olivia: Account;

    beforeAll(async () => {
      olivia = { username: marker('olivia'), password: 'olivia-password-2026' };
      const api = await apiSession(baseUrl());
      const made = await api.fetch('/api/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...olivia, displayName: LONG_NAME, role: 'admin' }),
      });
      expect(made.status).toBe(201);
    });

    it('keeps an admin’s menu on one row at 1280 px, the name cut in the header readable whole', async () => {
      const { page } = await suite.open();
      await page.setViewportSize(DESKTOP);
      await logIn(page, olivia);
      const problems: string[] = [];
      for (const [path, heading] of [
        ['/users', 'Users'],
        ['/audit', 'Audit'],
        ['/account', 'Account and security'],
      ] as const) {
        await openPage(page, path, heading);
        const rows = await navRows(page);
        if (rows.length > 1) problems.push(`${path}: the menu's links are on ${rows.length} rows`);
        for (const what of await cut(page)) problems.push(`${path}: ${what}`);
      }
      await screenshot(page, 'desktop-long-name');
      problems.push(...(await nameReadable(page, LONG_NAME)));
      expect(problems).toEqual([]);
    });

    it('at 390 px, gives the name whole in the user menu and the Test mode band on one line', async () => {
      const { page } = await suite.open();
      await page.setViewportSize(PHONE);
      await logIn(page, olivia);
      const wide = await check(page, [
        ['/dashboard', 'Dashboard'],
        ['/users', 'Users'],
        ['/account', 'Account and security'],
      ]);
      wide.push(...(await nameReadable(page, LONG_NAME)));
      expect(await testModeLines(page), 'lines of the Test mode band').toBe(1);
      expect(wide).toEqual([]);
    });
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
