import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import type { Download, Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiSession, E2E_SCHOOL, registerE2eSchool } from './accounts.js';
import { baseUrl, browserAvailable, browserSuite, screenshot } from './browser.js';

// The staff console and the .asmx service, end to end: the real built server (global-setup.ts),
// Debian's Chromium, and real HTTP clients (Node's fetch) calling the service as schools do.
// Every test makes its own calls, marked with a User-Agent (or parameter) no other test uses, so
// the tests do not depend on one another's data or order.

const PHONE = '+447911123456';
const SCHOOL = E2E_SCHOOL;
const CSV_HEADER = 'id,at,group,operation,binding,callerIp,userAgent,params,outcome,status,error,durationMs';
/** Polls (no fixed sleeps) until the page settles, well inside the test's timeout. */
const SETTLED = { timeout: 15_000, interval: 100 };

/** A marker no other call carries, short enough to show whole in the table's Caller column. */
const marker = (prefix: string): string => `${prefix}-${randomBytes(4).toString('hex')}`;

/** SOAP 1.1 AuthCode, as a school's server sends it. */
async function soap11AuthCode(code: string, phone: string, userAgent: string): Promise<Response> {
  const envelope =
    '<?xml version="1.0" encoding="utf-8"?>' +
    '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>' +
    `<AuthCode xmlns="http://tempuri.org/"><code>${code}</code><phone>${phone}</phone></AuthCode>` +
    '</soap:Body></soap:Envelope>';
  return fetch(`${baseUrl()}/AuthCodeSending.asmx`, {
    method: 'POST',
    headers: {
      'Content-Type': 'text/xml; charset=utf-8',
      SOAPAction: '"http://tempuri.org/AuthCode"',
      'User-Agent': userAgent,
    },
    body: envelope,
  });
}

/** An HTTP GET binding call (`/X.asmx/Op?…`), which must succeed. */
async function httpGet(pathAndQuery: string, userAgent: string): Promise<void> {
  const response = await fetch(`${baseUrl()}${pathAndQuery}`, { headers: { 'User-Agent': userAgent } });
  expect(response.status, `GET ${pathAndQuery}: ${await response.text()}`).toBe(200);
}

const pushNoti = (userAgent: string) => httpGet('/PushNotificationMobile.asmx/pushNoti', userAgent);

const sendMarkNotes = (id: string, userAgent: string) =>
  httpGet(
    `/NotificationNotes.asmx/SendMarkNotes?${new URLSearchParams({ id, id_class: '7B', baseUrlSchool: SCHOOL })}`,
    userAgent,
  );

// ---- Reading the page as a person would: by roles, names and labels. ----

const callsTable = (page: Page): Locator => page.getByRole('table', { name: 'Calls, newest first' });

/** The table's body rows (the header row has column headers, not cells). */
const bodyRows = (page: Page): Locator =>
  callsTable(page)
    .getByRole('row')
    .filter({ has: page.getByRole('cell') });

/** One row as { column header: cell text }. */
async function readRow(page: Page, row: Locator): Promise<Record<string, string>> {
  const headers = await callsTable(page).getByRole('columnheader').allInnerTexts();
  const cells = await row.getByRole('cell').allInnerTexts();
  return Object.fromEntries(headers.map((header, i) => [header.trim(), (cells[i] ?? '').trim()]));
}

/** Every body row, read at once. */
async function readRows(page: Page): Promise<Record<string, string>[]> {
  const rows = await bodyRows(page).all();
  return Promise.all(rows.map((row) => readRow(page, row)));
}

/** The call number of a row, from its link ("Call 12, <time>"). */
const callId = (row: Record<string, string>): number => Number(/^Call (\d+),/.exec(row.Time ?? '')?.[1]);

/**
 * Opens a row's call from its link, with the keyboard. (Playwright's click aims at the link's
 * first box, the 1-pixel visually hidden "Call N," text, which the cell covers; a mouse user
 * clicks the visible time.)
 */
async function openCall(row: Locator): Promise<void> {
  const link = row.getByRole('link', { name: /^Call \d+,/ });
  const id = /^Call (\d+),/.exec((await link.textContent())?.trim() ?? '')?.[1];
  await link.press('Enter');
  await row
    .page()
    .getByRole('heading', { name: `Call #${id}`, level: 1 })
    .waitFor();
}

/** The call page's summary, as { term: definition }. */
async function readSummary(page: Page): Promise<Record<string, string>> {
  const terms = await page.getByRole('term').allInnerTexts();
  const definitions = await page.getByRole('definition').allInnerTexts();
  return Object.fromEntries(terms.map((term, i) => [term.trim(), (definitions[i] ?? '').trim()]));
}

/** Clicks what starts a download and waits for the file, as the browser saved it. */
async function download(page: Page, trigger: Locator): Promise<{ file: Download; text: string }> {
  const [file] = await Promise.all([page.waitForEvent('download'), trigger.click()]);
  expect(await file.failure()).toBeNull();
  const saved = await file.path();
  return { file, text: await fs.readFile(saved, 'utf8') };
}

/** RFC 4180 CSV (quoted cells may hold commas, quotes and line breaks) into rows of cells. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  if (cell !== '' || row.length > 0) rows.push([...row, cell]);
  return rows;
}

// ---- The Dashboard, read from its charts' words (the canvas itself says nothing to a reader). ----

/** As the console writes a percentage: one decimal below 10 %, whole numbers above. */
const formatPercent = (value: number): string =>
  `${value < 10 && value > 0 ? value.toFixed(1) : Math.round(value)}%`;

/** The series a chart's legend names (uPlot's legend, without its time column). */
async function legend(figure: Locator): Promise<string[]> {
  const labels = await figure.locator('.u-legend .u-series .u-label').allInnerTexts();
  return labels.map((l) => l.replace(/:$/, '').trim()).filter((l) => l !== 'Time');
}

interface DashboardNumbers {
  calls: number;
  byOperation: Record<string, number>;
  clientErrors: number;
  serverErrors: number;
  errorRate: string;
}

/** A chart's description: what it shows, in words. */
const summary = async (figure: Locator): Promise<string> =>
  ((await figure.getByText(/ in the last /).textContent()) ?? '').trim();

/** The totals the two charts' descriptions state, for `bucket` charts over `period`. */
async function readDashboard(page: Page, bucket: 'hour' | 'day', period: string): Promise<DashboardNumbers> {
  const callsText = await summary(page.getByRole('figure', { name: `Calls per ${bucket} by operation` }));
  const errorText = await summary(page.getByRole('figure', { name: `Errors per ${bucket}` }));
  const callsMatch = new RegExp(`^(\\d+) calls? in the last ${period}: (.*)\\.$`).exec(callsText);
  const errorMatch = new RegExp(
    `^Error rate (\\d+(?:\\.\\d)?%) in the last ${period} \\((\\d+) client errors, (\\d+) server errors\\)`,
  ).exec(errorText);
  if (!callsMatch || !errorMatch) throw new Error(`unexpected Dashboard text: ${callsText} | ${errorText}`);
  const byOperation = Object.fromEntries(
    (callsMatch[2] ?? '').split(', ').map((entry) => {
      // "AuthCode 12", "Unknown operation 3": the count is after the last space.
      const at = entry.lastIndexOf(' ');
      return [entry.slice(0, at), Number(entry.slice(at + 1))];
    }),
  );
  return {
    calls: Number(callsMatch[1]),
    byOperation,
    clientErrors: Number(errorMatch[2]),
    serverErrors: Number(errorMatch[3]),
    errorRate: errorMatch[1] ?? '',
  };
}

describe.skipIf(!browserAvailable())('staff console (real server, Chromium)', () => {
  const suite = browserSuite('logged-in');

  beforeAll(async () => {
    // The notification calls below are for this school: register it, as an admin would.
    await registerE2eSchool(await apiSession(baseUrl()));
  });

  it('shows a SOAP 1.1 call from a real client in History as it arrives, with Live on', async () => {
    const { page } = suite.session;
    await page.goto('/history');
    await page.getByRole('heading', { name: 'History', level: 1 }).waitFor();
    // The list has loaded (whatever earlier tests recorded) before Live goes on.
    await callsTable(page).or(page.getByText('No calls recorded yet.')).waitFor();

    await page.getByRole('button', { name: 'Live', pressed: false }).click();
    await page.getByRole('button', { name: 'Live', pressed: true }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Listening for new calls.' }).waitFor();
    // Survives only if the page is never reloaded.
    await page.evaluate(() => {
      (window as { e2eSamePage?: boolean } & Window).e2eSamePage = true;
    });

    const agent = marker('e2e-live');
    const response = await soap11AuthCode('4821', PHONE, agent);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('<AuthCodeResponse xmlns="http://tempuri.org/" />');

    const row = bodyRows(page).filter({ hasText: agent });
    await row.waitFor();
    const shown = await readRow(page, row);
    expect(shown).toMatchObject({ Operation: 'AuthCode', Protocol: 'SOAP 1.1' });
    // One verdict: answered, then what came of the SMS (still being looked up, or logged); the
    // wire's answer a detail.
    expect(shown.Result).toContain('Answered');
    expect(shown.Result).toContain('Wire answer: HTTP 200');
    expect(shown.Caller).toContain('127.0.0.1');
    // The code is a secret: masked in the history; the phone is shown.
    expect(shown['Key parameters']).toContain('code=***');
    expect(shown['Key parameters']).toContain(`phone=${PHONE}`);
    expect(shown['Key parameters']).not.toContain('4821');

    await page.getByRole('status').filter({ hasText: 'Listening for new calls. 1 new.' }).waitFor();
    // The total follows the rows as they arrive.
    // (Before the recount a second later: the live call is added to the last count at once.)
    const rows = await bodyRows(page).count();
    const total = `${rows} ${rows === 1 ? 'call' : 'calls'} recorded.`;
    if (rows < 50) await page.getByText(total, { exact: true }).waitFor({ timeout: 500 });
    expect(await page.evaluate(() => (window as { e2eSamePage?: boolean } & Window).e2eSamePage)).toBe(true);
    await screenshot(page, 'history-live-soap11');

    // The call as recorded: the SOAP request, the code masked in its body too, and the answer.
    await openCall(row);
    const request = page.getByRole('region', { name: 'Request' });
    await request.getByText('POST /AuthCodeSending.asmx HTTP/1.1').waitFor();
    const requestText = (await request.textContent()) ?? '';
    expect(requestText).toContain('SOAPAction: "http://tempuri.org/AuthCode"');
    expect(requestText).toContain(`User-Agent: ${agent}`);
    expect(requestText).toContain('<code>***</code>');
    expect(requestText).toContain(`<phone>${PHONE}</phone>`);
    expect(requestText).not.toContain('4821');
    const responseText = (await page.getByRole('region', { name: 'Response' }).textContent()) ?? '';
    expect(responseText).toContain('HTTP/1.1 200');
    expect(responseText).toContain('<AuthCodeResponse xmlns="http://tempuri.org/" />');
  });

  it('sends an AuthCode from the Send form and shows it as a console call with its request and response', async () => {
    const { page } = suite.session;
    await page.goto('/send');
    // Send opens at the first operation.
    await page.getByRole('heading', { name: 'Send a login code AuthCode', level: 2 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/send/AuthCode');

    await page.getByLabel('Verification code (code)', { exact: true }).fill('4821');
    await page.getByLabel('Phone number (phone)', { exact: true }).fill(PHONE);
    await page.getByRole('button', { name: 'Send', exact: true }).click();

    // Queued, then followed until it settles: the log provider logs it, nothing is sent.
    await page.locator('.outcome-title').getByText('Answered · SMS logged, not sent').waitFor();
    await page.getByRole('link', { name: new RegExp(`^Delivery #\\d+: SMS to \\${PHONE}$`) }).waitFor();
    const link = page.getByRole('link', { name: /^View call #\d+ in History$/ });
    const id = Number(/#(\d+)/.exec((await link.textContent()) ?? '')?.[1]);
    expect(id).toBeGreaterThan(0);
    await link.click();

    await page.waitForURL(`**/history/${id}`);
    await page.getByRole('heading', { name: `Call #${id}`, level: 1 }).waitFor();
    const request = page.getByRole('region', { name: 'Request' });
    const response = page.getByRole('region', { name: 'Response' });
    await request.getByText('POST /api/operations/AuthCode HTTP/1.1').waitFor();

    expect(await readSummary(page)).toMatchObject({
      Operation: 'AuthCode (AuthCodeSending)',
      Protocol: 'Console',
      'Wire answer': 'HTTP 200',
    });
    await page.getByRole('definition').getByText('Answered · SMS logged, not sent').waitFor();
    const summary = await readSummary(page);
    expect(summary.Parameters).toContain('code=***');
    expect(summary.Parameters).toContain(`phone=${PHONE}`);

    const requestText = (await request.textContent()) ?? '';
    expect(requestText).toContain('Content-Type: application/json');
    expect(requestText).toContain(`"phone": "${PHONE}"`);
    expect(requestText).toContain('"code": "***"');
    expect(requestText).not.toContain('4821');
    const responseText = (await response.textContent()) ?? '';
    expect(responseText).toContain('HTTP/1.1 200');
    expect(responseText).toContain('Content-Type: application/json; charset=utf-8');
    expect(responseText).toContain(`"message": "SMS queued to ${PHONE}."`);
    await screenshot(page, 'send-authcode-call');

    // Back in History, the call is listed with the console binding.
    await page.getByRole('link', { name: '← Back to History' }).click();
    const row = bodyRows(page).filter({ has: page.getByRole('link', { name: new RegExp(`^Call ${id},`) }) });
    await row.waitFor();
    const listed = await readRow(page, row);
    expect(listed).toMatchObject({ Operation: 'AuthCode', Protocol: 'Console' });
    expect(listed.Result).toContain('Answered · SMS logged, not sent');
  });

  it('narrows History to one operation, keeping the filter in the URL across a reload', async () => {
    const { page } = suite.session;
    const agent = marker('e2e-filter');
    await pushNoti(agent);
    await sendMarkNotes('88', agent);
    await pushNoti(agent);
    await sendMarkNotes('89', agent);

    await page.goto('/history');
    const ours = bodyRows(page).filter({ hasText: agent });
    await expect.poll(() => ours.count(), SETTLED).toBe(4);
    const allOperations = new Set((await readRows(page)).map((r) => r.Operation));
    expect(allOperations).toContain('pushNoti');
    expect(allOperations).toContain('SendMarkNotes');

    const operation = page.getByLabel('Operation', { exact: true });
    await operation.selectOption('SendMarkNotes');
    await page.waitForURL((url) => url.searchParams.get('operation') === 'SendMarkNotes');
    const onlySendMarkNotes = async () => {
      const rows = await readRows(page);
      return {
        operations: [...new Set(rows.map((r) => r.Operation))],
        ours: rows.filter((r) => r.Caller?.includes(agent)).length,
      };
    };
    await expect.poll(onlySendMarkNotes, SETTLED).toEqual({ operations: ['SendMarkNotes'], ours: 2 });
    await screenshot(page, 'history-filter-operation');

    await page.reload();
    expect(new URL(page.url()).searchParams.get('operation')).toBe('SendMarkNotes');
    await callsTable(page).waitFor();
    expect(await operation.inputValue()).toBe('SendMarkNotes');
    await expect.poll(onlySendMarkNotes, SETTLED).toEqual({ operations: ['SendMarkNotes'], ours: 2 });

    // A call opened from the filtered list leads back to the filtered list.
    await openCall(ours.first());
    await page.getByRole('link', { name: '← Back to History' }).click();
    await page.waitForURL(
      (url) => url.pathname === '/history' && url.searchParams.get('operation') === 'SendMarkNotes',
    );
    await expect.poll(onlySendMarkNotes, SETTLED).toEqual({ operations: ['SendMarkNotes'], ours: 2 });
    expect(await operation.inputValue()).toBe('SendMarkNotes');

    // Clearing the filters brings every operation back and empties the URL's query.
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.waitForURL((url) => url.pathname === '/history' && url.search === '');
    await expect.poll(() => ours.count(), SETTLED).toBe(4);
    expect(await operation.inputValue()).toBe('');
  });

  it('exports the filtered calls, and only those, as CSV and as JSON', async () => {
    const { page } = suite.session;
    const agent = marker('e2e-export');
    const ids = [`${agent}-1`, `${agent}-2`, `${agent}-3`];
    for (const id of ids) await sendMarkNotes(id, agent);
    // Left out by the operation filter, and by the text filter.
    await pushNoti(agent);
    await sendMarkNotes('90', marker('e2e-other'));

    await page.goto('/history');
    await page.getByLabel('Operation', { exact: true }).selectOption('SendMarkNotes');
    await page.waitForURL((url) => url.searchParams.get('operation') === 'SendMarkNotes');
    // The page has caught up with the URL (its fields are reset from it) before typing.
    await expect
      .poll(async () => [...new Set((await readRows(page)).map((r) => r.Operation))], SETTLED)
      .toEqual(['SendMarkNotes']);
    await page.getByLabel('Text', { exact: true }).fill(agent);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(
      (url) => url.searchParams.get('operation') === 'SendMarkNotes' && url.searchParams.get('q') === agent,
    );
    await expect.poll(async () => (await readRows(page)).length, SETTLED).toBe(3);
    const rows = await readRows(page);
    for (const row of rows) expect(row).toMatchObject({ Operation: 'SendMarkNotes', Protocol: 'HTTP GET' });
    const shownIds = rows.map(callId).sort((a, b) => a - b);
    await screenshot(page, 'history-export-filters');

    const csv = await download(page, page.getByRole('link', { name: 'Export CSV' }));
    expect(csv.file.suggestedFilename()).toMatch(/^calls-\d{8}T\d{6}\.csv$/);
    const [header, ...lines] = parseCsv(csv.text);
    expect(header?.join(',')).toBe(CSV_HEADER);
    expect(csv.text.startsWith(`${CSV_HEADER}\r\n`)).toBe(true);
    const columns = CSV_HEADER.split(',');
    const records = lines.map((cells) => Object.fromEntries(columns.map((c, i) => [c, cells[i]])));
    expect(records).toHaveLength(3);
    for (const record of records) {
      expect(record).toMatchObject({
        group: 'NotificationNotes',
        operation: 'SendMarkNotes',
        binding: 'http-get',
        userAgent: agent,
        outcome: 'ok',
        status: '200',
        error: '',
      });
      expect(JSON.parse(record.params ?? '')).toMatchObject({ id_class: '7B', baseUrlSchool: SCHOOL });
    }
    expect(records.map((r) => JSON.parse(r.params ?? '').id).sort()).toEqual(ids);
    expect(records.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(shownIds);

    const json = await download(page, page.getByRole('link', { name: 'Export JSON' }));
    expect(json.file.suggestedFilename()).toMatch(/^calls-\d{8}T\d{6}\.json$/);
    const calls = JSON.parse(json.text) as {
      id: number;
      operation: string;
      binding: string;
      params: Record<string, string>;
      request: string;
      response: string;
    }[];
    expect(calls).toHaveLength(3);
    for (const call of calls) {
      expect(call).toMatchObject({ operation: 'SendMarkNotes', binding: 'http-get' });
      expect(call.request).toMatch(/^GET \/NotificationNotes\.asmx\/SendMarkNotes\?id=/);
      expect(call.request).toContain(`User-Agent: ${agent}`);
      expect(call.response).toMatch(/^HTTP\/1\.1 200/);
    }
    expect(calls.map((c) => c.params.id).sort()).toEqual(ids);
    expect(calls.map((c) => c.id).sort((a, b) => a - b)).toEqual(shownIds);
  });

  it('shows the Dashboard: calls per operation and the error rate, for the period chosen', async () => {
    const { page } = suite.session;
    const agent = marker('e2e-dashboard');
    await pushNoti(agent);

    await page.goto('/send');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dashboard' }).click();
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    expect(await page.getByLabel('Period').inputValue()).toBe('24h');
    expect(await page.getByLabel('Group by').inputValue()).toBe('hour');

    // Charts, each named and described in words; the legend names every operation, top of the
    // stacked bars first.
    const calls = page.getByRole('figure', { name: 'Calls per hour by operation' });
    const errors = page.getByRole('figure', { name: 'Errors per hour' });
    await calls.getByText(/^\d+ calls? in the last 24 hours: /).waitFor();
    await calls.getByRole('img', { name: 'Calls per hour by operation' }).locator('canvas').first().waitFor();
    await errors.getByRole('img', { name: 'Errors per hour' }).locator('canvas').first().waitFor();
    expect((await legend(calls)).filter((name) => name !== 'Unknown operation')).toEqual([
      'pushNoti',
      'SendMarkNotes',
      'SendNotificationType',
      'GetBookPdfByTerm',
      'AuthCode',
    ]);
    expect(await legend(errors)).toEqual(['Server errors', 'Client errors', 'Error rate']);
    const before = await readDashboard(page, 'hour', '24 hours');
    expect(before.byOperation.pushNoti).toBeGreaterThanOrEqual(1);

    // What this test adds: 3 OK pushNoti, 1 OK SendMarkNotes and 2 AuthCode refused (client errors).
    for (let i = 0; i < 3; i++) await pushNoti(agent);
    await sendMarkNotes(`${agent}-1`, agent);
    for (const phone of ['12345', 'not-a-phone']) {
      const refused = await fetch(
        `${baseUrl()}/AuthCodeSending.asmx/AuthCode?${new URLSearchParams({ code: '4821', phone })}`,
        { headers: { 'User-Agent': agent } },
      );
      expect(refused.status).toBe(400);
    }

    // The numbers stay as they were ("now" is fixed) until Refresh.
    expect(await readDashboard(page, 'hour', '24 hours')).toEqual(before);
    await page.getByRole('button', { name: 'Refresh' }).click();
    const expected = {
      calls: before.calls + 6,
      byOperation: {
        ...before.byOperation,
        pushNoti: (before.byOperation.pushNoti ?? 0) + 3,
        SendMarkNotes: (before.byOperation.SendMarkNotes ?? 0) + 1,
        AuthCode: (before.byOperation.AuthCode ?? 0) + 2,
      },
      clientErrors: before.clientErrors + 2,
      serverErrors: before.serverErrors,
    };
    const rate = formatPercent(((expected.clientErrors + expected.serverErrors) / expected.calls) * 100);
    await expect
      .poll(() => readDashboard(page, 'hour', '24 hours'), SETTLED)
      .toEqual({ ...expected, errorRate: rate });
    // There were errors: the chart says in which hour they were worst.
    expect(await summary(errors)).toMatch(/; highest \d+(\.\d)?% in the hour from .+\.$/);
    await screenshot(page, 'dashboard');

    // Another period and bucket: the charts are re-titled and re-counted, and the URL keeps them.
    await page.getByLabel('Period').selectOption({ label: 'Last 7 days' });
    await page.getByLabel('Group by').selectOption({ label: 'Day' });
    await page.waitForURL(
      (url) => url.searchParams.get('period') === '7d' && url.searchParams.get('bucket') === 'day',
    );
    await page.getByRole('figure', { name: 'Calls per day by operation' }).waitFor();
    await page.getByRole('figure', { name: 'Errors per day' }).waitFor();
    expect(await page.getByRole('figure', { name: 'Calls per hour by operation' }).count()).toBe(0);
    // Every call of this suite is younger than a day: the same totals, over 7 days.
    await expect
      .poll(() => readDashboard(page, 'day', '7 days'), SETTLED)
      .toEqual({ ...expected, errorRate: rate });
    expect(await summary(page.getByRole('figure', { name: 'Errors per day' }))).toMatch(
      /; highest \d+(\.\d)?% in the day from .+\.$/,
    );
    await page.reload();
    await page.getByRole('figure', { name: 'Calls per day by operation' }).waitFor();
    expect(await page.getByLabel('Period').inputValue()).toBe('7d');
    expect(await page.getByLabel('Group by').inputValue()).toBe('day');
  });

  it('shows the Service: every endpoint with its WSDL, which is a WSDL', async () => {
    const { page } = suite.session;
    await page.goto('/send');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Service' }).click();
    await page.getByRole('heading', { name: 'Service', level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'Mobile push notification', level: 2 }).waitFor();

    const summary = await readSummary(page);
    expect(summary).toMatchObject({ Namespace: 'http://tempuri.org/', 'Base URL': baseUrl() });
    const groups = ['AuthCodeSending', 'BookPdf', 'NotificationNotes', 'PushNotificationMobile'];
    const wsdlLinks = await Promise.all(
      groups.map((group) => page.getByRole('link', { name: `WSDL of ${group}` }).getAttribute('href')),
    );
    expect(wsdlLinks).toEqual(groups.map((group) => `${baseUrl()}/${group}.asmx?wsdl`));
    const notes = page.getByRole('region', { name: 'Notification notes' });
    const operations = notes.getByRole('table', { name: 'Operations of Notification notes' });
    await operations.getByRole('link', { name: 'Send SendMarkNotes' }).waitFor();
    await screenshot(page, 'service');

    const wsdlUrl = wsdlLinks[2] ?? '';
    const response = await fetch(wsdlUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/xml/);
    const wsdl = await response.text();
    expect(wsdl).toMatch(/^<\?xml version="1\.0" encoding="utf-8"\?>\s*<wsdl:definitions /);
    expect(wsdl).toContain('targetNamespace="http://tempuri.org/"');
    expect(wsdl).toContain('<wsdl:operation name="SendMarkNotes">');
    expect(wsdl).toContain('<wsdl:service name="NotificationNotes">');
    expect(wsdl).toContain(`<soap:address location="${baseUrl()}/NotificationNotes.asmx" />`);
    expect(wsdl.trimEnd().endsWith('</wsdl:definitions>')).toBe(true);

    // An operation's Send link opens its form.
    await operations.getByRole('link', { name: 'Send SendMarkNotes' }).click();
    await page
      .getByRole('heading', { name: 'Notify a class of new marks SendMarkNotes', level: 2 })
      .waitFor();
    await page.getByLabel('Class (id_class)', { exact: true }).waitFor();
  });
});
