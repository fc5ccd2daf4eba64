import fs from 'node:fs';
import { createRequire } from 'node:module';
import { ERASED, EXAMPLE_PHONE } from '@school/contract';
import type { AxeResults, RunOptions } from 'axe-core';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, apiSession } from './accounts.js';
import { browserAvailable, browserSuite, logIn, screenshot } from './browser.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

// A parent's number, reported and erased from the console's Privacy page on the real server: on a
// server of this test's own, as an erasure changes what every other suite's pages would show. The
// number is the one the phone field's placeholder prints, typed as printed. The page is looked at
// 1280 and 390 px wide (nothing wider than the window, no button off it) and checked by axe-core
// (WCAG 2.1 A and AA) with the report shown and with the erasure's question open.

const WIDTHS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe's WCAG 2.1 A/AA violations on the page as it stands, one line each. */
async function violations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const options: RunOptions = {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
  };
  const results = await page.evaluate(
    (options) => (window as unknown as { axe: { run(o: RunOptions): Promise<AxeResults> } }).axe.run(options),
    options,
  );
  return results.violations.map(
    (v) =>
      `${v.id} (${v.impact ?? 'no impact'}): ${v.help}; at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
}

/**
 * What does not fit the window: the page scrolling sideways, and a button, badge, code or cell
 * off the screen or outside the box that scrolls or clips it (a table scrolled sideways hides its
 * last columns). Not what is visually hidden (a table's headers at phone width, one pixel clipped).
 */
async function unfit(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const width = window.innerWidth;
    if (document.documentElement.scrollWidth > width)
      found.push(`the page is ${document.documentElement.scrollWidth}px wide in a ${width}px window`);
    for (const el of Array.from(document.querySelectorAll('button, a.button, .badge, code, td, th'))) {
      const box = el.getBoundingClientRect();
      if (box.width === 0) continue;
      let clip: DOMRect = new DOMRect(0, 0, width, window.innerHeight);
      let hidden = false;
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX === 'visible') continue;
        const r = a.getBoundingClientRect();
        if (r.width <= 1) hidden = true;
        else clip = r;
        break;
      }
      if (hidden) continue;
      const left = Math.max(0, clip.left);
      const right = Math.min(width, clip.right);
      if (box.left < left - 0.5 || box.right > right + 0.5)
        found.push(
          `"${(el.textContent ?? '').trim().slice(0, 40)}": ${Math.round(box.left)}-${Math.round(box.right)}px, outside ${Math.round(left)}-${Math.round(right)}px`,
        );
    }
    return found;
  });
}

/** At each width: what does not fit and what axe finds, named by `when`; a screenshot of each. */
async function lookAt(page: Page, when: string): Promise<string[]> {
  const found: string[] = [];
  for (const size of WIDTHS) {
    await page.setViewportSize(size);
    for (const what of await unfit(page)) found.push(`${size.width}px, ${when}: ${what}`);
    for (const what of await violations(page)) found.push(`${size.width}px, ${when}: ${what}`);
    await screenshot(page, `privacy-${when.replace(/\W+/g, '-')}-${size.name}`);
  }
  await page.setViewportSize(WIDTHS[0]);
  return found;
}

async function download(page: Page, trigger: Locator): Promise<{ name: string; text: string }> {
  const [file] = await Promise.all([page.waitForEvent('download'), trigger.click()]);
  expect(await file.failure()).toBeNull();
  return { name: file.suggestedFilename(), text: fs.readFileSync(await file.path(), 'utf8') };
}

describe.skipIf(!browserAvailable())(
  "Privacy: a parent's number reported and erased (real server, Chromium)",
  () => {
    const suite = browserSuite('none');
    let server: ServerProcess | undefined;

    beforeAll(async () => {
      server = await startServerProcess({}, { name: 'privacy' });
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('finds everything held about the number the placeholder prints, downloads it, erases it, and History then says [erased]', async () => {
      const base = server?.url ?? '';
      const api = await apiSession(base);
      // A school's server asks for a code to the number: the call, and its SMS (the log provider's).
      const envelope =
        '<?xml version="1.0" encoding="utf-8"?>' +
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>' +
        `<AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>${EXAMPLE_PHONE}</phone></AuthCode>` +
        '</soap:Body></soap:Envelope>';
      const soap = await fetch(`${base}/AuthCodeSending.asmx`, {
        method: 'POST',
        headers: { 'Content-Type': 'text/xml; charset=utf-8', SOAPAction: '"http://tempuri.org/AuthCode"' },
        body: envelope,
      });
      expect(soap.status, await soap.clone().text()).toBe(200);
      const calls = (await (await api.fetch('/api/calls?operation=AuthCode')).json()) as {
        items: { id: number }[];
      };
      const callId = calls.items[0]?.id as number;
      expect(callId).toBeGreaterThan(0);
      await expect
        .poll(
          async () => (await (await api.fetch(`/api/deliveries?callId=${callId}`)).json()).items[0]?.status,
          {
            timeout: 15_000,
          },
        )
        .toBe('logged');

      const { page } = await suite.open(base);
      await logIn(page, ADMIN, '/privacy');
      await page.getByRole('heading', { name: 'Privacy', level: 1 }).waitFor();
      const field = page.getByLabel('Phone number', { exact: true });
      await expect.poll(() => field.getAttribute('placeholder')).toBe(`e.g. ${EXAMPLE_PHONE}`);
      const printed = ((await field.getAttribute('placeholder')) ?? '').replace(/^e\.g\. /, '');
      await field.fill(printed);
      await page.getByRole('button', { name: 'Find everything held' }).click();

      await page.getByRole('heading', { name: `Held about ${EXAMPLE_PHONE}`, level: 2 }).waitFor();
      const callsTable = page.getByRole('table', { name: 'Calls (1)' });
      expect(await callsTable.getByRole('link', { name: `Call #${callId}` }).getAttribute('href')).toBe(
        `/history/${callId}`,
      );
      const callRow = await callsTable.getByRole('row').nth(1).textContent();
      expect(callRow).toContain('AuthCode');
      expect(callRow).toContain('Answered · SMS logged, not sent');
      const deliveries = page.getByRole('table', { name: 'Deliveries (1)' });
      const delivery = await deliveries.getByRole('row').nth(1).textContent();
      expect(delivery).toContain('Logged, not sent');
      expect(delivery).toContain(EXAMPLE_PHONE);
      expect(delivery).toMatch(/: Logged/);

      const csv = await download(page, page.getByRole('link', { name: 'Download CSV' }));
      expect(csv.name).toMatch(/^privacy-report-\d{8}T\d{6}\.csv$/);
      expect(csv.text.split('\r\n')[0]).toBe('record,id,callId,deliveryId,at,what,status,detail');
      expect(csv.text).toContain(`call,${callId},${callId}`);
      const json = await download(page, page.getByRole('link', { name: 'Download JSON' }));
      expect(json.name).toMatch(/^privacy-report-\d{8}T\d{6}\.json$/);
      const report = JSON.parse(json.text) as { phone: string; calls: { id: number }[] };
      expect(report.phone).toBe(EXAMPLE_PHONE);
      expect(report.calls.map((c) => c.id)).toEqual([callId]);

      const found = await lookAt(page, 'report');
      await page.getByRole('button', { name: 'Erase this number' }).click();
      const question = page.getByRole('group', {
        name: `Erase ${EXAMPLE_PHONE} from everything this service holds?`,
      });
      await question.waitFor();
      expect(await question.textContent()).toContain('This cannot be undone');
      found.push(...(await lookAt(page, 'erase question')));
      await question.getByRole('button', { name: 'Yes, erase this number' }).click();

      const done = page.getByRole('heading', { name: `Erased ${EXAMPLE_PHONE}`, level: 2 });
      await done.waitFor();
      const counts = page.locator('section.privacy-erased dl');
      expect(await counts.locator('dt:text-is("Calls") + dd').textContent()).toMatch(/^1 /);
      expect(await counts.locator('dt:text-is("Deliveries") + dd').textContent()).toBe('1');
      expect(await counts.locator('dt:text-is("On disk") + dd').textContent()).toContain(
        'write-ahead log checkpointed and truncated',
      );
      found.push(...(await lookAt(page, 'erased')));
      expect(found, 'what does not fit, and WCAG 2.1 A/AA violations').toEqual([]);

      // The call is still in History, saying [erased] where the number was.
      await page.goto(`/history/${callId}`);
      await page.getByRole('heading', { name: `Call #${callId}`, level: 1 }).waitFor();
      await page.getByText(ERASED).first().waitFor();
      expect(await page.locator('main').textContent()).not.toContain('7400123456');

      // Asked again, nothing is held.
      await page.goto('/privacy');
      await page.getByLabel('Phone number', { exact: true }).fill(printed);
      await page.getByRole('button', { name: 'Find everything held' }).click();
      await page.getByText('Nothing is held about this number.').waitFor();
    });
  },
);
