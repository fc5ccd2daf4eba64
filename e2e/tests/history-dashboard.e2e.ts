import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Api, apiSession, E2E_SCHOOL, registerE2eSchool } from './accounts.js';
import { baseUrl, browserAvailable, browserSuite, screenshot } from './browser.js';

// History and the Dashboard: true outcomes, rows that open, Replay, and charts that
// lead to the calls they count. Each test marks its calls with a User-Agent no other test uses.

const SCHOOL = E2E_SCHOOL;
const marker = (prefix: string): string => `${prefix}-${randomBytes(4).toString('hex')}`;

interface CallRow {
  id: number;
  operation: string | null;
  binding: string;
  outcome: string;
  status: number;
  userAgent: string | null;
  params: Record<string, string> | null;
}

/** This test's calls, newest first, as the API lists them. */
async function callsBy(api: Api, agent: string, filters: Record<string, string> = {}): Promise<CallRow[]> {
  const res = await api.fetch(`/api/calls?${new URLSearchParams({ limit: '200', ...filters })}`);
  const { items } = (await res.json()) as { items: CallRow[] };
  return items.filter((c) => c.userAgent === agent);
}

describe.skipIf(!browserAvailable())('History and Dashboard (real server, Chromium)', () => {
  const suite = browserSuite('logged-in');
  let api: Api;

  beforeAll(async () => {
    api = await apiSession(baseUrl());
    await registerE2eSchool(api);
  });

  it('opens a call from its row, and replays it as a new console call after a confirmation', async () => {
    const { page } = suite.session;
    const agent = marker('e2e-replay');
    const query = new URLSearchParams({ id: '4242', id_class: '7B', baseUrlSchool: SCHOOL });
    const sent = await fetch(`${baseUrl()}/NotificationNotes.asmx/SendMarkNotes?${query}`, {
      headers: { 'User-Agent': agent },
    });
    expect(sent.status).toBe(200);
    const [original] = await callsBy(api, agent);
    if (!original) throw new Error('the call was not recorded');

    await page.goto('/history?operation=SendMarkNotes');
    // A click on the caller's cell, not on the link, opens the call.
    await page.getByRole('cell', { name: new RegExp(agent) }).click();
    await page.waitForURL(`**/history/${original.id}`);
    await page.getByRole('heading', { name: `Call #${original.id}`, level: 1 }).waitFor();

    await page.getByRole('button', { name: 'Replay' }).click();
    const question = page.getByRole('group', { name: /^Send SendMarkNotes again with the recorded / });
    await question.getByRole('button', { name: 'Yes, send again' }).click();
    await page.waitForURL(
      (url) => /^\/history\/\d+$/.test(url.pathname) && url.pathname !== `/history/${original.id}`,
    );
    const replayedId = Number(new URL(page.url()).pathname.split('/').pop());
    expect(replayedId).toBeGreaterThan(original.id);
    await page.getByRole('heading', { name: `Call #${replayedId}`, level: 1 }).waitFor();

    const res = await api.fetch(`/api/calls/${replayedId}`);
    const replayed = (await res.json()) as CallRow;
    expect(replayed).toMatchObject({
      operation: 'SendMarkNotes',
      binding: 'console',
      outcome: 'ok',
      params: original.params,
    });
    await screenshot(page, 'replayed-call');
  });

  it('records a book range it cannot serve (416) as a client error, found by the Client error filter', async () => {
    const { page } = suite.session;
    const agent = marker('e2e-range');
    const head =
      '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\n';
    const body = Buffer.concat([
      Buffer.from(head),
      Buffer.alloc(2000, '%'),
      Buffer.from('trailer<</Root 1 0 R>>\n%%EOF\n'),
    ]);
    const up = await api.fetch('/api/books/e2e-416/7B?filename=range.pdf', {
      method: 'PUT',
      headers: { 'content-type': 'application/pdf' },
      body,
    });
    expect(up.status).toBe(200);
    const beyond = await fetch(`${baseUrl()}/BookPdf.asmx/GetBookPdfByTerm?termId=e2e-416&srid=&classId=7B`, {
      headers: { 'User-Agent': agent, Range: 'bytes=999999-' },
    });
    expect(beyond.status).toBe(416);

    await page.goto('/history?operation=GetBookPdfByTerm');
    await page.getByLabel('Outcome').selectOption({ label: 'Refused (client error)' });
    await page.waitForURL((url) => url.searchParams.get('outcome') === 'client-error');
    const row = page.getByRole('row').filter({ hasText: agent });
    await row.waitFor();
    expect(await row.textContent()).toContain('Refused: range not satisfiable (416)');
  });

  it('explains unknown operations on the Dashboard and lists them in History; a bar leads to its calls', async () => {
    const { page } = suite.session;
    const agent = marker('e2e-unknown');
    const unknown = await fetch(`${baseUrl()}/AuthCodeSending.asmx/NoSuchOperation?x=1`, {
      headers: { 'User-Agent': agent },
    });
    expect(unknown.status).toBeGreaterThanOrEqual(400);

    await page.goto('/dashboard');
    const note = page.getByRole('note').filter({ hasText: 'Unknown operation' });
    await note.waitFor();
    expect(await note.textContent()).toMatch(/to an address or operation name this service does not have/);
    await note.getByRole('link', { name: /See (it|them) in History/ }).click();
    await page.waitForURL(
      (url) => url.pathname === '/history' && url.searchParams.get('operation') === '(unknown)',
    );
    // The History page's own filter (the Dashboard's charts, named "… by operation", may still
    // be leaving the page as the URL changes).
    await page.getByRole('heading', { name: 'History', level: 1 }).waitFor();
    expect(await page.getByLabel('Operation', { exact: true }).inputValue()).toBe('(unknown)');
    await page.getByRole('row').filter({ hasText: agent }).waitFor();

    // A click on the newest bar of the calls chart lists that hour's calls of the operation under it.
    await page.goto('/dashboard');
    const calls = page.getByRole('figure', { name: 'Calls per hour by operation' });
    await calls.locator('canvas').first().waitFor();
    const over = calls.locator('.u-over');
    const box = await over.boundingBox();
    if (!box) throw new Error('no plot');
    // The last bucket is the current hour, at the right end; near the bottom is its lowest part.
    await page.mouse.move(box.x + box.width - 3, box.y + box.height - 2);
    await page.mouse.click(box.x + box.width - 3, box.y + box.height - 2);
    await page.waitForURL((url) => url.pathname === '/history');
    const url = new URL(page.url());
    const from = Date.parse(url.searchParams.get('from') ?? '');
    const to = Date.parse(url.searchParams.get('to') ?? '');
    expect(to - from).toBeGreaterThan(0);
    expect(to - from).toBeLessThanOrEqual(3_600_000);
    expect(url.searchParams.get('operation')).not.toBeNull();
  });
});
