import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';

/**
 * Where the books' bytes live, content-addressed by SHA-256: files under DATA_DIR/books with
 * SQLite, chunks in the database with PostgreSQL, so that several instances on one database
 * share nothing else. The `books` rows say which hashes are in use; these only hold the bytes.
 */
export interface BookBlobs {
  /**
   * Stores an upload: streamed to a temporary file while hashed and measured (never held in
   * memory), refused past `maxBytes` or when it does not start like a PDF, then kept under its
   * hash. The same bytes uploaded twice are stored once.
   */
  put(
    source: Readable,
    maxBytes: number,
    /** Says why `maxBytes` was reached when it is not the per-file limit (a full library): 507. */
    whyFull?: (limit: number) => string | undefined,
  ): Promise<{ sha256: string; size: number }>;
  /** The bytes `start` to `end` (inclusive) of a stored blob, read as they are consumed. */
  read(sha256: string, start: number, end: number): Readable;
  /** Forgets a blob; the caller checks first that no book still uses it. */
  remove(sha256: string): Promise<void>;
}

export class UploadError extends Error {
  constructor(
    readonly status: 400 | 413 | 415 | 507,
    message: string,
  ) {
    super(message);
  }
}

type WhyFull = (limit: number) => string | undefined;

/**
 * Streams `source` to a new file in `tempDir`, hashing and measuring it, refuses it (UploadError)
 * when it is too large, empty or not a PDF, and hands the file to `keep`. The file is removed
 * afterwards whatever happened (`keep` may have moved it already).
 */
async function spool<T>(
  tempDir: string,
  source: Readable,
  maxBytes: number,
  whyFull: WhyFull,
  keep: (temp: string, sha256: string, size: number) => Promise<T>,
): Promise<T> {
  await fs.promises.mkdir(tempDir, { recursive: true });
  const temp = path.join(tempDir, `${randomUUID()}.part`);
  const hash = createHash('sha256');
  let size = 0;
  let head = Buffer.alloc(0);
  try {
    await pipeline(
      source,
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          size += chunk.length;
          if (size > maxBytes) {
            const full = whyFull(maxBytes);
            throw full
              ? new UploadError(507, full)
              : new UploadError(413, `The file is larger than the limit of ${maxBytes} bytes.`);
          }
          if (head.length < 5) head = Buffer.concat([head, chunk.subarray(0, 5 - head.length)]);
          hash.update(chunk);
          yield chunk;
        }
      },
      fs.createWriteStream(temp, { flags: 'wx' }),
    );
    if (size === 0) throw new UploadError(400, 'The file is empty.');
    if (head.toString('latin1') !== '%PDF-')
      throw new UploadError(415, 'The file is not a PDF (it does not start with %PDF-).');
    return await keep(temp, hash.digest('hex'), size);
  } finally {
    await fs.promises.rm(temp, { force: true });
  }
}

const noReason: WhyFull = () => undefined;

/** Where a book's bytes live with files: DATA_DIR/books/<first two hex digits>/<sha256>.pdf. */
export function bookPath(dataDir: string, sha256: string): string {
  return path.join(dataDir, 'books', sha256.slice(0, 2), `${sha256}.pdf`);
}

/** Books as files under DATA_DIR/books, named by their hash (one instance, SQLite). */
export function createFileBlobs(dataDir: string): BookBlobs {
  const tempDir = path.join(dataDir, 'books', 'tmp');
  return {
    put(source, maxBytes, whyFull = noReason) {
      return spool(tempDir, source, maxBytes, whyFull, async (temp, sha256, size) => {
        const target = bookPath(dataDir, sha256);
        await fs.promises.mkdir(path.dirname(target), { recursive: true });
        // Same name, same bytes: replacing a file already there changes nothing.
        await fs.promises.rename(temp, target);
        return { sha256, size };
      });
    },
    read(sha256, start, end) {
      if (end < start) return Readable.from([], { objectMode: false });
      return fs.createReadStream(bookPath(dataDir, sha256), { start, end });
    },
    async remove(sha256) {
      await fs.promises.rm(bookPath(dataDir, sha256), { force: true });
    },
  };
}

/** The size of every chunk of a book in the database but its last (which may be shorter). */
export const BOOK_CHUNK_BYTES = 256 * 1024;

/** Chunks fetched per query when reading: about 1 MiB in memory at a time, whatever the book. */
const CHUNKS_PER_QUERY = 4;

/** Reads exactly `length` bytes at `position` (fewer only at the end of the file). */
export async function readFully(
  file: fs.promises.FileHandle,
  position: number,
  length: number,
): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await file.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled === length ? buffer : buffer.subarray(0, filled);
}

/**
 * Books in the database (`book_chunks`), in chunks of BOOK_CHUNK_BYTES numbered from 0, so that
 * every instance on one PostgreSQL database serves every book. An upload is spooled to a
 * temporary file in `tempDir` first (on DATA_DIR's volume rather than a memory-backed /tmp) and
 * its chunks inserted in one transaction: a book's chunks are all there or none are.
 *
 * Meant for PostgreSQL. It works on SQLite too (the tests run it there), but SQLite's single
 * connection would be held by the upload's transaction while the file is read.
 */
export function createDbBlobs(db: Kysely<Database>, tempDir: string = os.tmpdir()): BookBlobs {
  async function stored(sha256: string): Promise<boolean> {
    const row = await db
      .selectFrom('book_chunks')
      .select('seq')
      .where('sha256', '=', sha256)
      .where('seq', '=', 0)
      .executeTakeFirst();
    return row !== undefined;
  }

  async function* chunks(sha256: string, start: number, end: number): AsyncGenerator<Buffer> {
    const first = Math.floor(start / BOOK_CHUNK_BYTES);
    const last = Math.floor(end / BOOK_CHUNK_BYTES);
    for (let from = first; from <= last; from += CHUNKS_PER_QUERY) {
      const to = Math.min(last, from + CHUNKS_PER_QUERY - 1);
      const rows = await db
        .selectFrom('book_chunks')
        .select(['seq', 'data'])
        .where('sha256', '=', sha256)
        .where('seq', '>=', from)
        .where('seq', '<=', to)
        .orderBy('seq')
        .execute();
      for (let seq = from; seq <= to; seq++) {
        const row = rows[seq - from];
        if (row?.seq !== seq) throw new Error(`Chunk ${seq} of book ${sha256} is missing.`);
        const offset = seq * BOOK_CHUNK_BYTES;
        const slice = row.data.subarray(
          Math.max(0, start - offset),
          Math.min(row.data.length, end - offset + 1),
        );
        if (slice.length > 0) yield slice;
      }
    }
  }

  return {
    put(source, maxBytes, whyFull = noReason) {
      return spool(tempDir, source, maxBytes, whyFull, async (temp, sha256, size) => {
        if (await stored(sha256)) return { sha256, size };
        const file = await fs.promises.open(temp, 'r');
        try {
          await db.transaction().execute(async (trx) => {
            for (let seq = 0; seq * BOOK_CHUNK_BYTES < size; seq++) {
              const data = await readFully(file, seq * BOOK_CHUNK_BYTES, BOOK_CHUNK_BYTES);
              // The same bytes uploaded at the same moment: the first transaction's chunks stay.
              await trx
                .insertInto('book_chunks')
                .values({ sha256, seq, data })
                .onConflict((oc) => oc.columns(['sha256', 'seq']).doNothing())
                .execute();
            }
          });
        } finally {
          await file.close();
        }
        return { sha256, size };
      });
    },
    read(sha256, start, end) {
      // A Readable over a generator pulls the next chunk only when the last one has been taken
      // (backpressure), and stops querying when the stream is destroyed.
      if (end < start) return Readable.from([], { objectMode: false });
      return Readable.from(chunks(sha256, start, end), { objectMode: false });
    },
    async remove(sha256) {
      await db.deleteFrom('book_chunks').where('sha256', '=', sha256).execute();
    },
  };
}
