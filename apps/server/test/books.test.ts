import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

/** A small but real PDF (one empty page), padded to `size` bytes with a comment. */
function pdf(label: string, size = 4096): Buffer {
  const head = `%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\n% ${label}\n`;
  const tail = 'trailer<</Root 1 0 R>>\n%%EOF\n';
  return Buffer.concat([
    Buffer.from(head),
    Buffer.alloc(Math.max(0, size - head.length - tail.length), '%'),
    Buffer.from(tail),
  ]);
}

describe.each(DIALECTS)('book library (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestAppOn(dialect, { MAX_BOOK_BYTES: '65536' });
  });
  afterAll(async () => {
    await t.close();
  });

  /** The book files under DATA_DIR/books (PostgreSQL keeps the bytes in the database instead). */
  const files = () => {
    const root = path.join(t.dataDir, 'books');
    if (!fs.existsSync(root)) return [];
    return fs
      .readdirSync(root)
      .filter((d) => d !== 'tmp')
      .flatMap((d) => fs.readdirSync(path.join(root, d)));
  };
  const chunkRows = async () =>
    (await t.app.store.db.selectFrom('book_chunks').select('sha256').distinct().execute()).map(
      (r) => r.sha256,
    );
  /** The hashes whose bytes the server keeps, wherever it keeps them. */
  const kept = async () =>
    dialect === 'postgres' ? await chunkRows() : files().map((f) => f.replace(/\.pdf$/, ''));

  const upload = (termId: string, classId: string, body: Buffer, type = 'application/pdf') =>
    t.inject({
      method: 'PUT',
      url: `/api/books/${encodeURIComponent(termId)}/${encodeURIComponent(classId)}?filename=maths.pdf`,
      headers: { 'content-type': type },
      payload: body,
    });

  it('stores an uploaded PDF and serves it over the HTTP bindings with ETag, 304 and Range', async () => {
    const file = pdf('term 2026-1, class 7B', 10_000);
    const res = await upload('2026-1', '7B', file);
    expect(res.statusCode).toBe(200);
    const book = res.json();
    expect(book).toMatchObject({ termId: '2026-1', classId: '7B', size: 10_000, filename: 'maths.pdf' });
    expect(book.url).toMatch(/\/BookPdf\.asmx\/GetBookPdfByTerm\?termId=2026-1&srid=&classId=7B$/);

    const get = await t.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=S-9&classId=7B',
    });
    expect(get.statusCode).toBe(200);
    expect(get.headers['content-type']).toBe('application/pdf');
    expect(get.headers['content-disposition']).toBe(
      `inline; filename="book-2026-1-7B.pdf"; filename*=UTF-8''book-2026-1-7B.pdf`,
    );
    expect(get.rawPayload.equals(file)).toBe(true);
    const etag = get.headers.etag as string;
    expect(etag).toBe(`"${book.sha256}"`);

    const post = await t.inject({
      method: 'POST',
      url: '/BookPdf.asmx/GetBookPdfByTerm',
      headers: { 'content-type': 'application/x-www-form-urlencoded', range: 'bytes=100-199' },
      payload: 'termId=2026-1&srid=S-9&classId=7B',
    });
    expect(post.statusCode).toBe(206);
    expect(post.headers['content-range']).toBe('bytes 100-199/10000');
    expect(post.rawPayload.equals(file.subarray(100, 200))).toBe(true);

    const suffix = await t.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=&classId=7B',
      headers: { range: 'bytes=-6' },
    });
    expect(suffix.body).toBe('%EOF\n'.padStart(6, '%'));
    const cached = await t.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=&classId=7B',
      headers: { 'if-none-match': etag },
    });
    expect(cached.statusCode).toBe(304);
    const beyond = await t.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=&classId=7B',
      headers: { range: 'bytes=20000-' },
    });
    expect(beyond.statusCode).toBe(416);
    expect(beyond.headers['content-range']).toBe('bytes */10000');

    // SOAP answers the empty response when the book exists.
    const soap = await t.inject({
      method: 'POST',
      url: '/BookPdf.asmx',
      headers: {
        'content-type': 'text/xml; charset=utf-8',
        soapaction: '"http://tempuri.org/GetBookPdfByTerm"',
      },
      payload:
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><GetBookPdfByTerm xmlns="http://tempuri.org/"><termId>2026-1</termId><srid>S-9</srid><classId>7B</classId></GetBookPdfByTerm></soap:Body></soap:Envelope>',
    });
    expect(soap.statusCode).toBe(200);
    expect(soap.body).toContain('<GetBookPdfByTermResponse xmlns="http://tempuri.org/" />');

    // The call record keeps no PDF bytes.
    const calls = await t.app.history.list({ limit: 10 });
    const record = calls.find((c) => c.binding === 'http-post');
    expect(record?.response).toContain('[PDF bytes 100-199 of 10000]');
    expect(record?.params).toContain('"srid":"S-9"');

    // Where the bytes are: files with SQLite; in the database only, with PostgreSQL.
    if (dialect === 'postgres') {
      expect(files()).toEqual([]);
      expect(await chunkRows()).toEqual([book.sha256]);
    } else {
      expect(files()).toEqual([`${book.sha256}.pdf`]);
      expect(await chunkRows()).toEqual([]);
    }
  });

  it('replaces a book, and removes it', async () => {
    const first = (await upload('T2', '8A', pdf('first'))).json();
    expect(await kept()).toContain(first.sha256);
    const second = pdf('second');
    const replaced = (await upload('T2', '8A', second)).json();
    // The replaced bytes go, as no other book uses them.
    expect(await kept()).not.toContain(first.sha256);
    const list = (await t.inject({ method: 'GET', url: '/api/books' })).json();
    expect(list.filter((b: { termId: string }) => b.termId === 'T2')).toHaveLength(1);
    const file = await t.inject({ method: 'GET', url: `/api/books/${replaced.id}/file` });
    expect(file.rawPayload.equals(second)).toBe(true);
    expect((await t.inject({ method: 'DELETE', url: `/api/books/${replaced.id}` })).statusCode).toBe(204);
    const gone = await t.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=T2&srid=&classId=8A',
    });
    expect(gone.statusCode).toBe(404);
    expect(gone.body).toBe("No book exists for term 'T2' and class '8A'.");
    expect(await kept()).not.toContain(replaced.sha256);
  });

  it('refuses what is not a PDF, an empty file, and a file over MAX_BOOK_BYTES', async () => {
    const notPdf = await upload('T3', '1', Buffer.from('<html>not a pdf</html>'));
    expect(notPdf.statusCode).toBe(415);
    expect(notPdf.json().detail).toBe('The file is not a PDF (it does not start with %PDF-).');
    expect((await upload('T3', '1', Buffer.alloc(0))).statusCode).toBe(400);
    const big = await upload('T3', '1', pdf('big', 70_000));
    expect(big.statusCode).toBe(413);
    expect(big.json().detail).toBe('The file is larger than the limit of 65536 bytes.');
    const list = (await t.inject({ method: 'GET', url: '/api/books' })).json();
    expect(list.find((b: { termId: string }) => b.termId === 'T3')).toBeUndefined();
    expect(fs.readdirSync(path.join(t.dataDir, 'books', 'tmp'))).toEqual([]);
  });
});
