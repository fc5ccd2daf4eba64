import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Kysely, KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BOOK_CHUNK_BYTES,
  type BookBlobs,
  bookPath,
  createDbBlobs,
  createFileBlobs,
  UploadError,
} from '../src/books/blobs.js';
import { serveBook } from '../src/books/serve.js';
import { OUTBOX_TABLES } from '../src/outbox/index.js';
import { openDatabase } from '../src/store/db.js';
import type { BookRow } from '../src/store/index.js';
import type { Database } from '../src/store/schema.js';
import { tempDataDir } from './helpers.js';
import { DIALECTS, type FreshDatabase, freshPostgres } from './pg.js';

/** Bytes that start like a PDF, the rest random (so every chunk differs). */
function pdfBytes(size: number): Buffer {
  const bytes = randomBytes(size);
  Buffer.from('%PDF-1.7\n').copy(bytes);
  return bytes;
}

/** A source that arrives in pieces of `piece` bytes, as an HTTP body does. */
function source(bytes: Buffer, piece = 64 * 1024): Readable {
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += piece) pieces.push(bytes.subarray(at, at + piece));
  return Readable.from(pieces, { objectMode: false });
}

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Counts the chunk rows the database hands back, to see how much a read fetched. */
class ChunkCounter implements KyselyPlugin {
  rows = 0;
  transformQuery: KyselyPlugin['transformQuery'] = (args) => args.node;
  transformResult: KyselyPlugin['transformResult'] = async (args) => {
    this.rows += args.result.rows.filter((r) => Buffer.isBuffer((r as { data?: unknown }).data)).length;
    return args.result;
  };
}

interface Subject {
  readonly blobs: BookBlobs;
  /** The hashes whose bytes are kept. */
  stored(): Promise<string[]>;
  /** Files left in the upload's temporary folder. */
  leftovers(): string[];
  /** Only for the database: the chunk rows of one hash, with their sizes, and the counter. */
  readonly chunks?: (sha256: string) => Promise<{ seq: number; size: number }[]>;
  readonly counter?: ChunkCounter;
  close(): Promise<void>;
}

const listDir = (dir: string): string[] => (fs.existsSync(dir) ? fs.readdirSync(dir) : []);

function fileSubject(): Subject {
  const temp = tempDataDir();
  return {
    blobs: createFileBlobs(temp.dir),
    async stored() {
      const root = path.join(temp.dir, 'books');
      return listDir(root)
        .filter((d) => d !== 'tmp')
        .flatMap((d) => listDir(path.join(root, d)))
        .map((f) => f.replace(/\.pdf$/, ''))
        .sort();
    },
    leftovers: () => listDir(path.join(temp.dir, 'books', 'tmp')),
    async close() {
      temp.remove();
    },
  };
}

async function dbSubject(dialect: 'sqlite' | 'postgres'): Promise<Subject> {
  const temp = tempDataDir();
  let fresh: FreshDatabase | undefined;
  if (dialect === 'postgres') fresh = await freshPostgres();
  const opened = await openDatabase({
    dataDir: temp.dir,
    synchronous: 'NORMAL',
    databaseUrl: fresh?.url,
    owners: [OUTBOX_TABLES],
  });
  expect(opened.dialect).toBe(dialect);
  const counter = new ChunkCounter();
  const db: Kysely<Database> = opened.db.withPlugin(counter);
  const spool = path.join(temp.dir, 'spool');
  return {
    blobs: createDbBlobs(db, spool),
    counter,
    async stored() {
      const rows = await opened.db.selectFrom('book_chunks').select('sha256').distinct().execute();
      return rows.map((r) => r.sha256).sort();
    },
    async chunks(sha256) {
      const rows = await opened.db
        .selectFrom('book_chunks')
        .select(['seq', 'data'])
        .where('sha256', '=', sha256)
        .orderBy('seq')
        .execute();
      return rows.map((r) => ({ seq: r.seq, size: r.data.length }));
    },
    leftovers: () => listDir(spool),
    async close() {
      await opened.db.destroy();
      await fresh?.drop();
      temp.remove();
    },
  };
}

const subjects: [string, () => Promise<Subject>, boolean][] = [
  ['files', async () => fileSubject(), false],
  ...DIALECTS.map((d): [string, () => Promise<Subject>, boolean] => [
    `database (${d})`,
    () => dbSubject(d),
    true,
  ]),
];

describe.each(subjects)('book blobs: %s', (_name, open, inDatabase) => {
  let s: Subject;
  beforeAll(async () => {
    s = await open();
  });
  afterAll(() => s.close());

  const book = pdfBytes(700 * 1024); // two full chunks and a short third
  let id: string;

  it('stores a multi-chunk book and reads it back byte for byte', async () => {
    const put = await s.blobs.put(source(book), 1024 * 1024);
    expect(put).toEqual({ sha256: sha(book), size: book.length });
    id = put.sha256;
    const back = await readAll(s.blobs.read(id, 0, book.length - 1));
    expect(back.equals(book)).toBe(true);
    expect(await s.stored()).toEqual([id]);
    expect(s.leftovers()).toEqual([]);
    if (s.chunks) {
      expect(await s.chunks(id)).toEqual([
        { seq: 0, size: BOOK_CHUNK_BYTES },
        { seq: 1, size: BOOK_CHUNK_BYTES },
        { seq: 2, size: book.length - 2 * BOOK_CHUNK_BYTES },
      ]);
    }
  });

  it('reads ranges within, across and at the ends of chunks', async () => {
    const C = BOOK_CHUNK_BYTES;
    const last = book.length - 1;
    const ranges: [number, number][] = [
      [0, 0],
      [0, 99],
      [100, 199],
      [C - 1, C - 1],
      [C - 1, C],
      [C, C],
      [C - 10, 2 * C + 10], // three chunks
      [2 * C - 1, last],
      [last, last],
      [last - 5, last],
      [5, last - 5],
    ];
    for (const [start, end] of ranges) {
      const part = await readAll(s.blobs.read(id, start, end));
      expect(part.length, `${start}-${end}`).toBe(end - start + 1);
      expect(part.equals(book.subarray(start, end + 1)), `${start}-${end}`).toBe(true);
    }
  });

  // Files: reading ahead is the operating system's business.
  it.runIf(inDatabase)('fetches only the chunks a range covers, as the reader takes them', async () => {
    const c = s.counter as ChunkCounter;
    c.rows = 0;
    await readAll(s.blobs.read(id, 10, 20));
    expect(c.rows).toBe(1);
    c.rows = 0;
    await readAll(s.blobs.read(id, BOOK_CHUNK_BYTES - 1, BOOK_CHUNK_BYTES));
    expect(c.rows).toBe(2);
    c.rows = 0;
    await readAll(s.blobs.read(id, book.length - 1, book.length - 1));
    expect(c.rows).toBe(1);

    // A 3 MiB book (12 chunks) read by a reader that stops after the first piece.
    const large = pdfBytes(12 * BOOK_CHUNK_BYTES);
    const put = await s.blobs.put(source(large), 4 * 1024 * 1024);
    c.rows = 0;
    const stream = s.blobs.read(put.sha256, 0, large.length - 1);
    const first = await new Promise<Buffer>((resolve) => stream.once('data', resolve));
    stream.pause();
    await new Promise((r) => setTimeout(r, 100));
    expect(first.equals(large.subarray(0, first.length))).toBe(true);
    expect(c.rows).toBeGreaterThan(0);
    expect(c.rows).toBeLessThan(12);
    stream.destroy();
    await s.blobs.remove(put.sha256);
  });

  it('serves a book with ETag, 304, Range and 416 (serveBook)', async () => {
    const row = {
      id: 1,
      term_id: '2026-1',
      class_id: '7B',
      sha256: id,
      size: book.length,
      filename: 'maths.pdf',
      uploaded_at: 0,
    } satisfies BookRow;
    const whole = serveBook(s.blobs, row, {});
    expect(whole.status).toBe(200);
    expect(whole.headers).toMatchObject({ etag: `"${id}"`, 'content-length': String(book.length) });
    expect((await readAll(whole.body as Readable)).equals(book)).toBe(true);
    const range = serveBook(s.blobs, row, { range: `bytes=${BOOK_CHUNK_BYTES - 3}-${BOOK_CHUNK_BYTES + 2}` });
    expect(range.status).toBe(206);
    expect(range.headers['content-range']).toBe(
      `bytes ${BOOK_CHUNK_BYTES - 3}-${BOOK_CHUNK_BYTES + 2}/${book.length}`,
    );
    expect(
      (await readAll(range.body as Readable)).equals(
        book.subarray(BOOK_CHUNK_BYTES - 3, BOOK_CHUNK_BYTES + 3),
      ),
    ).toBe(true);
    const suffix = serveBook(s.blobs, row, { range: 'bytes=-7' });
    expect((await readAll(suffix.body as Readable)).equals(book.subarray(-7))).toBe(true);
    expect(serveBook(s.blobs, row, { ifNoneMatch: `"${id}"` }).status).toBe(304);
    expect(serveBook(s.blobs, row, { range: `bytes=${book.length}-` }).status).toBe(416);
  });

  it('stores the same bytes uploaded twice once', async () => {
    const again = await s.blobs.put(source(book, 1000), 1024 * 1024);
    expect(again.sha256).toBe(id);
    expect(await s.stored()).toEqual([id]);
    if (s.chunks) expect(await s.chunks(id)).toHaveLength(3);
    expect((await readAll(s.blobs.read(id, 0, book.length - 1))).equals(book)).toBe(true);
    expect(s.leftovers()).toEqual([]);
  });

  it('refuses too large, not a PDF and empty, and keeps nothing of them', async () => {
    const refusal = async (p: Promise<unknown>) => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UploadError);
      return err as UploadError;
    };
    const big = pdfBytes(600 * 1024);
    const tooBig = await refusal(s.blobs.put(source(big), 500 * 1024));
    expect(tooBig.status).toBe(413);
    expect(tooBig.message).toBe(`The file is larger than the limit of ${500 * 1024} bytes.`);
    const full = await refusal(s.blobs.put(source(big), 500 * 1024, () => 'The library is full.'));
    expect([full.status, full.message]).toEqual([507, 'The library is full.']);
    const html = Buffer.concat([Buffer.from('<html>'), randomBytes(300 * 1024)]);
    const notPdf = await refusal(s.blobs.put(source(html), 1024 * 1024));
    expect(notPdf.status).toBe(415);
    const empty = await refusal(s.blobs.put(Readable.from([], { objectMode: false }), 1024 * 1024));
    expect(empty.status).toBe(400);
    expect(await s.stored()).toEqual([id]);
    expect(s.leftovers()).toEqual([]);
  });

  it('removes a book’s bytes', async () => {
    const other = pdfBytes(300 * 1024);
    const put = await s.blobs.put(source(other), 1024 * 1024);
    expect(await s.stored()).toEqual([id, put.sha256].sort());
    await s.blobs.remove(id);
    expect(await s.stored()).toEqual([put.sha256]);
    await s.blobs.remove(id); // already gone: nothing to do
    expect((await readAll(s.blobs.read(put.sha256, 0, other.length - 1))).equals(other)).toBe(true);
    await s.blobs.remove(put.sha256);
    expect(await s.stored()).toEqual([]);
  });

  it('fails the read of bytes it does not have', async () => {
    await expect(readAll(s.blobs.read(id, 0, 10))).rejects.toThrow();
  });
});

describe('file blobs', () => {
  it('keep a book where earlier versions put it (DATA_DIR/books/ab/<sha256>.pdf)', async () => {
    const temp = tempDataDir();
    try {
      const bytes = pdfBytes(10_000);
      const { sha256 } = await createFileBlobs(temp.dir).put(source(bytes), 1_000_000);
      expect(bookPath(temp.dir, sha256)).toBe(
        path.join(temp.dir, 'books', sha256.slice(0, 2), `${sha256}.pdf`),
      );
      expect(fs.readFileSync(bookPath(temp.dir, sha256)).equals(bytes)).toBe(true);
    } finally {
      temp.remove();
    }
  });
});
