import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Api, apiSession } from './accounts.js';
import { baseUrl, browserAvailable, browserSuite, logIn, screenshot } from './browser.js';

// Every page of the console at phone width (390 × 844): nothing wider than the screen. Long
// content (a SOAP sample, a raw request, a long user agent, long names) scrolls inside its own
// box or wraps; the page itself never scrolls sideways.

const PHONE = { width: 390, height: 844 };
const marker = (prefix: string): string => `${prefix}-${randomBytes(4).toString('hex')}`;

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

/** Opens `path` and waits for its heading and its data (no "Loading…" left). */
async function open(page: Page, path: string, heading: string | RegExp): Promise<void> {
  await page.goto(path);
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  await expect.poll(() => page.locator('.status-loading').count(), { timeout: 15_000 }).toBe(0);
}

/** Data that makes pages wide: a long school, a template, a book, a user, calls and deliveries. */
async function seed(api: Api): Promise<{ callId: number; deliveryId: number }> {
  const json = { 'content-type': 'application/json' };
  const tag = randomBytes(3).toString('hex');
  const school = await api.fetch('/api/schools', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      name: `Saint Bartholomew-the-Great Comprehensive Secondary School and Sixth Form College ${tag}`,
      baseUrl: `https://a-very-long-school-domain-name-${tag}.example.org/some/long/path/segment/`,
      topicKey: `st-bartholomew-the-great-secondary-${tag}`,
      allowedIps: ['198.51.100.0/24', '2001:db8:abcd:12::/64'],
    }),
  });
  expect(school.status).toBe(201);
  const template = await api.fetch('/api/templates', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      type: `homework-${tag}`,
      title: 'New homework for {id}',
      body: 'There is new homework for class {id}. Please log in to the school app to see the assignment.',
    }),
  });
  expect(template.status).toBe(201);
  const user = await api.fetch('/api/users', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      username: `operator.with.a.long.username.${tag}@example.org`,
      displayName: 'Operator With A Rather Long Display Name',
      password: 'operator-password-2026',
      role: 'operator',
    }),
  });
  expect(user.status).toBe(201);
  const book = await api.fetch(`/api/books/term-2026-autumn-${tag}/class-7B-extended-name`, {
    method: 'PUT',
    headers: { 'content-type': 'application/pdf' },
    body: '%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n',
  });
  expect(book.status).toBe(200);

  // A SOAP call from a school's server, with a user agent that has no space to wrap at.
  const agent = `SchoolServer/4.2.1 (${marker('phone-width')}; VeryLongAgentNameWithoutSpaces_${'A'.repeat(60)})`;
  const envelope =
    '<?xml version="1.0" encoding="utf-8"?>' +
    '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>' +
    '<AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>+447911123456</phone></AuthCode>' +
    '</soap:Body></soap:Envelope>';
  const soap = await fetch(`${baseUrl()}/AuthCodeSending.asmx`, {
    method: 'POST',
    headers: {
      'Content-Type': 'text/xml; charset=utf-8',
      SOAPAction: '"http://tempuri.org/AuthCode"',
      'User-Agent': agent,
    },
    body: envelope,
  });
  expect(soap.status).toBe(200);
  const calls = (await (await api.fetch('/api/calls?operation=AuthCode&binding=soap11')).json()) as {
    items: { id: number; userAgent: string | null }[];
  };
  const callId = calls.items.find((c) => c.userAgent === agent)?.id;
  expect(callId).toBeGreaterThan(0);
  const deliveries = (await (await api.fetch('/api/deliveries')).json()) as { items: { id: number }[] };
  const deliveryId = deliveries.items[0]?.id;
  expect(deliveryId).toBeGreaterThan(0);
  return { callId: callId as number, deliveryId: deliveryId as number };
}

describe.skipIf(!browserAvailable())('the console at phone width, 390 × 844 (real server, Chromium)', () => {
  const suite = browserSuite('none');
  let ids: { callId: number; deliveryId: number };

  beforeAll(async () => {
    ids = await seed(await apiSession(baseUrl()));
  });

  /** Visits each page and collects every one wider than the window, with what sticks out. */
  async function check(page: Page, pages: [path: string, heading: string | RegExp][]): Promise<string[]> {
    const wide: string[] = [];
    for (const [path, heading] of pages) {
      await open(page, path, heading);
      const { scrollWidth, innerWidth } = await overflow(page);
      expect(innerWidth).toBe(PHONE.width);
      if (scrollWidth > innerWidth) {
        const { culprits } = await overflow(page);
        wide.push(`${path}: ${scrollWidth}px wide; ${culprits.join('; ')}`);
      }
      await screenshot(page, `phone${path.replace(/\W+/g, '-')}`);
    }
    return wide;
  }

  it('fits every page of someone logged in into the width of the screen', async () => {
    const { page } = await suite.open();
    await page.setViewportSize(PHONE);
    await logIn(page);
    const wide = await check(page, [
      ['/send/AuthCode', 'Send'],
      ['/send/SendNotificationType', 'Send'],
      ['/history', 'History'],
      [`/history/${ids.callId}`, `Call #${ids.callId}`],
      ['/deliveries', 'Deliveries'],
      [`/deliveries/${ids.deliveryId}`, `Delivery #${ids.deliveryId}`],
      ['/dashboard', 'Dashboard'],
      ['/books', 'Books'],
      ['/schools', 'Schools'],
      ['/templates', 'Templates'],
      ['/users', 'Users'],
      ['/audit', 'Audit'],
      ['/service', 'Service'],
      ['/account', 'Account and security'],
    ]);

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

    expect(wide, 'pages wider than the screen').toEqual([]);
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
