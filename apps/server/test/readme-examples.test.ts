/**
 * The README's examples (its "Examples" section) sent as printed, curl's reading of them and all,
 * to a server set up as the README's configuration table suggests for a school in GB
 * (DEFAULT_PHONE_REGION=GB), SMS going through a real HTTP gateway: each answers what the README
 * says it answers, and the SMS example reaches the gateway.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type CurlRequest, curlCommandsUnder } from './curl-command.js';
import { startTestApp, type TestApp } from './helpers.js';
import { gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

const README = path.join(import.meta.dirname, '../../../README.md');
const examples = () => curlCommandsUnder(fs.readFileSync(README, 'utf8'), '### Examples');

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function gbServer(): Promise<{ t: TestApp; gateway: SmsGateway }> {
  const gateway = await startSmsGateway();
  cleanups.push(() => gateway.close());
  const t = await startTestApp({ ...gatewayEnv(gateway), DEFAULT_PHONE_REGION: 'GB' });
  cleanups.push(() => t.close());
  return { t, gateway };
}

/** The request as curl sends it, to the app: the README's address is the server's. */
const send = (t: TestApp, example: CurlRequest) =>
  t.app.inject({
    method: example.method as 'GET' | 'POST',
    url: example.url.pathname + example.url.search,
    headers: example.headers,
    ...(example.body === undefined ? {} : { payload: example.body }),
  });

/** A one-page PDF, as the Books page takes. */
const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);

describe("the README's examples", () => {
  it('are the four bindings, one operation each, addressed to the local server', () => {
    expect(examples().map((e) => `${e.method} ${e.url.origin}${e.url.pathname}`)).toEqual([
      'POST http://localhost:3000/AuthCodeSending.asmx',
      'POST http://localhost:3000/NotificationNotes.asmx',
      'GET http://localhost:3000/BookPdf.asmx/GetBookPdfByTerm',
      'POST http://localhost:3000/PushNotificationMobile.asmx/pushNoti',
    ]);
  });

  it('SOAP 1.1: AuthCode sends the code by SMS to the phone printed', async () => {
    const { t, gateway } = await gbServer();
    const [authCode] = examples();
    if (!authCode) throw new Error('no AuthCode example');
    const res = await send(t, authCode);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('<AuthCodeResponse xmlns="http://tempuri.org/" />');
    await t.app.outbox.idle();
    const phone = /<phone>([^<]*)<\/phone>/.exec(authCode.body ?? '')?.[1];
    expect(gateway.sent.map((m) => [m.to, m.text])).toEqual([[phone, 'Your code is 4821']]);
  });

  it('SOAP 1.2: SendMarkNotes answers "Unknown school" on a fresh install, then 200 once the school is added', async () => {
    const { t } = await gbServer();
    const markNotes = examples()[1];
    if (!markNotes) throw new Error('no SendMarkNotes example');
    const fresh = await send(t, markNotes);
    expect(fresh.statusCode).toBe(500);
    expect(fresh.body).toContain('Unknown school');

    // As the README says: the school added on the console's Schools page.
    const added = await t.inject({
      method: 'POST',
      url: '/api/schools',
      payload: { name: 'Example School', baseUrl: 'https://school.example.org/', topicKey: 'example' },
    });
    expect(added.statusCode, added.body).toBe(201);
    const res = await send(t, markNotes);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('<SendMarkNotesResponse xmlns="http://tempuri.org/" />');
  });

  it('HTTP GET: GetBookPdfByTerm answers 404 on a fresh install, then the PDF once the book is uploaded', async () => {
    const { t } = await gbServer();
    const book = examples()[2];
    if (!book) throw new Error('no GetBookPdfByTerm example');
    expect((await send(t, book)).statusCode).toBe(404);

    // As the README says: term 2026-1, class 7B, uploaded on the console's Books page.
    const uploaded = await t.inject({
      method: 'PUT',
      url: '/api/books/2026-1/7B?filename=maths.pdf',
      headers: { 'content-type': 'application/pdf' },
      payload: PDF,
    });
    expect(uploaded.statusCode, uploaded.body).toBe(200);
    const res = await send(t, book);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.rawPayload.equals(PDF)).toBe(true);
  });

  it('HTTP POST: pushNoti answers 200 with an empty body', async () => {
    const { t } = await gbServer();
    const push = examples()[3];
    if (!push) throw new Error('no pushNoti example');
    const res = await send(t, push);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toBe('');
  });
});
