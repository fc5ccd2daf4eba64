import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers.js';

describe('WSDL, DISCO and help pages', () => {
  let t: TestApp;
  beforeAll(async () => {
    // These tests are about what is echoed from Host headers: any host is answered here.
    t = await startTestApp({ ALLOWED_HOSTS: '*' });
  });
  afterAll(() => t.close());

  it('serves the WSDL for ?wsdl in any case, addressed from the request', async () => {
    for (const query of ['wsdl', 'WSDL', 'Wsdl']) {
      const res = await t.app.inject({
        method: 'GET',
        url: `/BookPdf.asmx?${query}`,
        headers: { host: 'sms.example.org:8080' },
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/xml; charset=utf-8');
      expect(res.body).toMatch(/^<\?xml version="1.0" encoding="utf-8"\?>\r\n<wsdl:definitions /);
      expect(res.body).toContain('<soap:address location="http://sms.example.org:8080/BookPdf.asmx" />');
    }
  });

  it('honours X-Forwarded-Proto only behind a trusted proxy, and PUBLIC_BASE_URL over all', async () => {
    const direct = await t.app.inject({
      method: 'GET',
      url: '/BookPdf.asmx?wsdl',
      headers: { host: 'h', 'x-forwarded-proto': 'https' },
    });
    expect(direct.body).toContain('location="http://h/BookPdf.asmx"');
    const proxied = await startTestApp({ TRUST_PROXY: 'true', ALLOWED_HOSTS: '*' });
    const pub = await startTestApp({ PUBLIC_BASE_URL: 'https://sms.example.org/base/', ALLOWED_HOSTS: '*' });
    try {
      const res = await proxied.app.inject({
        method: 'GET',
        url: '/BookPdf.asmx?wsdl',
        headers: { host: 'h', 'x-forwarded-proto': 'https' },
      });
      expect(res.body).toContain('location="https://h/BookPdf.asmx"');
      const res2 = await pub.app.inject({
        method: 'GET',
        url: '/BookPdf.asmx?wsdl',
        headers: { host: 'evil' },
      });
      expect(res2.body).toContain('location="https://sms.example.org/base/BookPdf.asmx"');
      expect(res2.body).not.toContain('evil');
    } finally {
      await proxied.close();
      await pub.close();
    }
  });

  it('never echoes a forged Host header into documents', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/BookPdf.asmx?wsdl',
      headers: { host: 'x"/><evil a="' },
    });
    expect(res.body).not.toContain('evil');
    expect(res.body).toContain('location="http://localhost/BookPdf.asmx"');
  });

  it('addresses the WSDL and DISCO with the path as the client spelled it, as ASMX did', async () => {
    const wsdl = await t.app.inject({
      method: 'GET',
      url: '/bookpdf.ASMX?wsdl',
      headers: { host: 'h' },
    });
    expect(wsdl.statusCode).toBe(200);
    expect(wsdl.body).toContain('<soap:address location="http://h/bookpdf.ASMX" />');
    expect(wsdl.body).toContain('<soap12:address location="http://h/bookpdf.ASMX" />');
    expect(wsdl.body).not.toContain('http://h/BookPdf.asmx');
    // The service and binding names stay the group's own.
    expect(wsdl.body).toContain('<wsdl:service name="BookPdf">');
    const disco = await t.app.inject({ method: 'GET', url: '/BOOKPDF.asmx?disco', headers: { host: 'h' } });
    expect(disco.body).toContain(
      '<contractRef ref="http://h/BOOKPDF.asmx?wsdl" docRef="http://h/BOOKPDF.asmx"',
    );
    // The canonical spelling is still answered as before, from its own cache entry.
    const canonical = await t.app.inject({
      method: 'GET',
      url: '/BookPdf.asmx?wsdl',
      headers: { host: 'h' },
    });
    expect(canonical.body).toContain('<soap:address location="http://h/BookPdf.asmx" />');
  });

  it('sends WSDL, DISCO and help pages with Cache-Control: private, max-age=0, as ASMX did', async () => {
    for (const url of [
      '/BookPdf.asmx?wsdl',
      '/BookPdf.asmx?disco',
      '/BookPdf.asmx',
      '/BookPdf.asmx?op=GetBookPdfByTerm',
      '/BookPdf.asmx?op=Nope',
    ]) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.headers['cache-control'], url).toBe('private, max-age=0');
    }
  });

  it('serves DISCO', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/NotificationNotes.asmx?disco',
      headers: { host: 'h' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<contractRef ref="http://h/NotificationNotes.asmx?wsdl"');
  });

  it('serves the operation list, operation pages and a not-found page, whatever the path case', async () => {
    const index = await t.app.inject({ method: 'GET', url: '/notificationnotes.ASMX' });
    expect(index.statusCode).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.body).toContain('href="/NotificationNotes.asmx?op=SendMarkNotes"');

    const page = await t.app.inject({
      method: 'GET',
      url: '/NotificationNotes.asmx?op=SendNotificationType',
      headers: { host: 'h' },
    });
    expect(page.body).toContain('<input type="text" id="p-TypeNotfication" name="TypeNotfication"');
    expect(page.body).toContain('POST /NotificationNotes.asmx HTTP/1.1\nHost: h');

    const unknown = await t.app.inject({
      method: 'GET',
      url: '/NotificationNotes.asmx?op=%3Cimg%20src%3Dx%3E',
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain(
      "Method '&lt;img src=x&gt;' was not found in the service NotificationNotes.",
    );
    expect(unknown.body).not.toContain('<img');

    const wrongCase = await t.app.inject({ method: 'GET', url: '/NotificationNotes.asmx?op=sendmarknotes' });
    expect(wrongCase.statusCode).toBe(404);
  });

  it('invokes the operation from the help page test form over HTTP POST', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/PushNotificationMobile.asmx?op=pushNoti' });
    const action = /<form target="_blank" action="([^"]+)" method="POST">/.exec(page.body)?.[1];
    expect(action).toBe('/PushNotificationMobile.asmx/pushNoti');
    const res = await t.app.inject({
      method: 'POST',
      url: action as string,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: '',
    });
    expect(res.statusCode).toBe(200);
  });

  it('answers /healthz once the store is ready', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', database: 'up', disk: 'ok' });
  });
});
