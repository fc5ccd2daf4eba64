import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiSession } from './accounts.js';
import { baseUrl, browserAvailable, browserSuite, logIn, screenshot } from './browser.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

// What the operations do, seen from the console: a book uploaded by staff is what apps download,
// and a delivery that died can be retried by hand.

/** A small real PDF, with a marker so each test's bytes are its own. */
function pdf(marker: string, size = 6000): Buffer {
  const head = `%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\n% ${marker}\n`;
  const tail = 'trailer<</Root 1 0 R>>\n%%EOF\n';
  return Buffer.concat([
    Buffer.from(head),
    Buffer.alloc(size - head.length - tail.length, 0x25),
    Buffer.from(tail),
  ]);
}

describe.skipIf(!browserAvailable())(
  'what the operations do, from the console (real server, Chromium)',
  () => {
    const suite = browserSuite('none');

    it('serves a book uploaded in the console over the GET binding, ranges included, byte for byte', async () => {
      const { page } = await suite.open();
      await logIn(page);
      const file = pdf(`e2e ${Date.now()}`);
      await page.goto('/books');
      await page.getByLabel('Term (termId)', { exact: true }).fill('E2E-2026');
      await page.getByLabel('Class (classId)', { exact: true }).fill('9 C');
      await page
        .getByLabel('PDF file')
        .setInputFiles({ name: 'science-9C.pdf', mimeType: 'application/pdf', buffer: file });
      await page.getByRole('button', { name: 'Upload' }).click();
      const books = page.getByRole('table', { name: 'Books' });
      await books.getByRole('link', { name: 'Open the book of term E2E-2026, class 9 C' }).waitFor();
      await screenshot(page, 'books-uploaded');

      const url = `${baseUrl()}/BookPdf.asmx/GetBookPdfByTerm?termId=E2E-2026&srid=S-77&classId=9%20C`;
      const whole = await fetch(url);
      expect(whole.status).toBe(200);
      expect(whole.headers.get('content-type')).toBe('application/pdf');
      expect(Buffer.from(await whole.arrayBuffer()).equals(file)).toBe(true);

      const part = await fetch(url, { headers: { range: 'bytes=1000-2999' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 1000-2999/${file.length}`);
      expect(Buffer.from(await part.arrayBuffer()).equals(file.subarray(1000, 3000))).toBe(true);

      // The console's own Open link serves the same bytes.
      const open = books.getByRole('link', { name: 'Open the book of term E2E-2026, class 9 C' });
      const href = await open.getAttribute('href');
      // (The API needs the admin's session: the browser's own cookies.)
      const fromConsole = await page.request.get(href ?? '');
      expect(fromConsole.status()).toBe(200);
      expect((await fromConsole.body()).equals(file)).toBe(true);
    });

    describe('with a push provider that refuses, then accepts', () => {
      let server: ServerProcess | undefined;
      let serverUrl = '';
      let hook: http.Server;
      let accept = false;
      const received: { status: number; body: Record<string, unknown> }[] = [];

      beforeAll(async () => {
        hook = http.createServer((req, res) => {
          let body = '';
          req.on('data', (c) => {
            body += c;
          });
          req.on('end', () => {
            const status = accept ? 200 : 400;
            received.push({ status, body: JSON.parse(body) });
            res
              .writeHead(status, { 'content-type': 'application/json' })
              .end(accept ? '{"ok":true}' : '{"error":"bad topic"}');
          });
        });
        await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
        server = await startServerProcess(
          {
            PUSH_PROVIDER: 'webhook',
            PUSH_WEBHOOK_URL: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/push`,
            PUSH_WEBHOOK_SECRET: 'e2e-webhook-secret-0123456789',
            DISPATCH_POLL_MS: '100',
          },
          { name: 'push' },
        );
        serverUrl = server.url;
      });
      afterAll(async () => {
        await server?.stop();
        hook.closeAllConnections();
        await new Promise((r) => hook.close(r));
      });

      it('retries a dead delivery from the console, and it is sent', async () => {
        const api = await apiSession(serverUrl);
        const school = await api.fetch('/api/schools', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            name: 'Retry School',
            baseUrl: 'https://retry.example.org',
            topicKey: 'retry',
          }),
        });
        expect(school.status).toBe(201);
        const call = await fetch(
          `${serverUrl}/NotificationNotes.asmx/SendNotificationType?id=5&baseUrlSchool=https%3A%2F%2Fretry.example.org&TypeNotfication=news`,
        );
        expect(call.status).toBe(200);
        // The provider answers 400: a permanent error, so the delivery is dead at once.
        await expect
          .poll(async () => (await (await api.fetch('/api/deliveries')).json()).counts.dead, {
            timeout: 15_000,
          })
          .toBe(1);
        const list = await (await api.fetch('/api/deliveries?status=dead')).json();
        const id = list.items[0].id as number;

        const { page } = await suite.open(serverUrl);
        await logIn(page, undefined, `/deliveries/${id}`);
        await page.getByRole('heading', { name: `Delivery #${id}`, level: 1 }).waitFor();
        await page.getByRole('region', { name: 'Attempts' }).getByText('Permanent error').waitFor();
        accept = true;
        await page.getByRole('button', { name: `Retry delivery ${id}` }).click();
        // The page follows the delivery until it settles.
        await expect
          .poll(
            async () =>
              (
                await page
                  .getByText('Status', { exact: true })
                  .locator('xpath=following-sibling::*[1]')
                  .textContent()
              )?.trim(),
            {
              timeout: 20_000,
            },
          )
          .toMatch(/^Sent/);
        // The retry's message followed it: sent, beside Sent.
        await page.getByText('Retried and sent.', { exact: true }).waitFor();
        await screenshot(page, 'delivery-retried');
        const accepted = received.filter((r) => r.status === 200);
        expect(accepted).toHaveLength(1);
        expect(accepted[0]?.body).toMatchObject({ topic: 'school-retry', data: { type: 'news', id: '5' } });
      });
    });
  },
);
