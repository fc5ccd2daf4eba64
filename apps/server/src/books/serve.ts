import type { Readable } from 'node:stream';
import type { BookRow } from '../store/index.js';
import type { BookBlobs } from './blobs.js';

export interface BookResponse {
  readonly status: 200 | 206 | 304 | 416;
  readonly headers: Record<string, string>;
  readonly body: Readable | undefined;
  /** For the call record, which keeps no PDF bytes. */
  readonly summary: string;
}

/** A file name safe in a Content-Disposition header, with the UTF-8 form beside it (RFC 6266). */
function disposition(book: BookRow): string {
  const name = `book-${book.term_id}-${book.class_id}.pdf`;
  const ascii = name.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  return `inline; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/**
 * Answers a GET or POST for a book as a browser or mobile app expects: `application/pdf` inline,
 * a strong ETag (the content hash), `If-None-Match` → 304, one `Range` → 206, an unsatisfiable
 * one → 416. Several ranges are answered with the whole file (allowed by RFC 9110).
 */
export function serveBook(
  blobs: BookBlobs,
  book: BookRow,
  headers: { ifNoneMatch?: string | undefined; range?: string | undefined },
): BookResponse {
  const etag = `"${book.sha256}"`;
  const common = {
    etag,
    'cache-control': 'private, max-age=0',
    'accept-ranges': 'bytes',
  };
  const matches = headers.ifNoneMatch
    ?.split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === etag || t === '*');
  if (matches) return { status: 304, headers: common, body: undefined, summary: 'not modified' };

  const size = book.size;
  const pdf = { ...common, 'content-type': 'application/pdf', 'content-disposition': disposition(book) };
  const range = headers.range?.trim();
  const single = range ? /^bytes=(\d*)-(\d*)$/.exec(range) : null;
  if (single && (single[1] !== '' || single[2] !== '')) {
    let start: number;
    let end: number;
    if (single[1] === '') {
      // A suffix: the last N bytes.
      start = Math.max(0, size - Number(single[2]));
      end = size - 1;
    } else {
      start = Number(single[1]);
      end = single[2] === '' ? size - 1 : Math.min(Number(single[2]), size - 1);
    }
    if (start >= size || start > end || size === 0) {
      return {
        status: 416,
        headers: { ...common, 'content-range': `bytes */${size}` },
        body: undefined,
        summary: `range ${range} not satisfiable`,
      };
    }
    return {
      status: 206,
      headers: {
        ...pdf,
        'content-range': `bytes ${start}-${end}/${size}`,
        'content-length': String(end - start + 1),
      },
      body: blobs.read(book.sha256, start, end),
      summary: `PDF bytes ${start}-${end} of ${size}`,
    };
  }
  return {
    status: 200,
    headers: { ...pdf, 'content-length': String(size) },
    body: blobs.read(book.sha256, 0, size - 1),
    summary: `PDF, ${size} bytes`,
  };
}
