import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Where a book's bytes live: content-addressed under DATA_DIR/books, named by SHA-256. */
export function bookPath(dataDir: string, sha256: string): string {
  return path.join(dataDir, 'books', sha256.slice(0, 2), `${sha256}.pdf`);
}

export class UploadError extends Error {
  constructor(
    readonly status: 400 | 413 | 415 | 507,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Stores an upload: streamed to a temporary file while hashed and measured (never held in
 * memory), refused past `maxBytes` or when it does not start like a PDF, then moved to its
 * content address. The same bytes uploaded twice are stored once.
 */
export async function storeBook(
  dataDir: string,
  source: Readable,
  maxBytes: number,
  /** Says why `maxBytes` was reached when it is not the per-file limit (a full library): 507. */
  whyFull: (limit: number) => string | undefined = () => undefined,
): Promise<{ sha256: string; size: number }> {
  const dir = path.join(dataDir, 'books');
  await fs.promises.mkdir(path.join(dir, 'tmp'), { recursive: true });
  const temp = path.join(dir, 'tmp', `${randomUUID()}.part`);
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
    const sha256 = hash.digest('hex');
    const target = bookPath(dataDir, sha256);
    await fs.promises.mkdir(path.dirname(target), { recursive: true });
    await fs.promises.rename(temp, target);
    return { sha256, size };
  } finally {
    await fs.promises.rm(temp, { force: true });
  }
}

export async function removeBookFile(dataDir: string, sha256: string): Promise<void> {
  await fs.promises.rm(bookPath(dataDir, sha256), { force: true });
}
