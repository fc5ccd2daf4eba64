import type { Readable } from 'node:stream';
import { bookSchema, problemSchema } from '@school/contract';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { endWithSession } from '../../auth/session-watch.js';
import { UploadError } from '../../books/blobs.js';
import { serveBook } from '../../books/serve.js';
import { problem, sendProblem } from '../../http/problem.js';
import type { BookRow } from '../../store/index.js';
import { publicBaseUrl } from '../asmx/base-url.js';
import { toBook } from './row-mapping.js';

const idParams = z.object({ id: z.coerce.number().int().positive() });

/** The book library GetBookPdfByTerm serves from: admins only (the scope's rule). */
export const bookRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store, config, bookBlobs } = app;

  // Uploads arrive as a raw PDF body, streamed to disk, never buffered. These routes' own: the
  // other JSON routes answer a PDF body 415.
  for (const type of ['application/pdf', 'application/octet-stream']) {
    app.addContentTypeParser(type, (_request, payload, done) => done(null, payload));
  }

  app.get(
    '/books',
    { schema: { summary: 'List the book library', tags: ['books'], response: { 200: z.array(bookSchema) } } },
    async (request) => {
      const { base: baseUrl } = publicBaseUrl(config, request);
      return (await store.books.list()).map((b) => toBook(b, baseUrl));
    },
  );
  app.put(
    '/books/:termId/:classId',
    {
      schema: {
        summary: 'Upload (or replace) the book of a term and class',
        description: `The body is the PDF itself (Content-Type application/pdf), at most MAX_BOOK_BYTES (${config.MAX_BOOK_BYTES} bytes).`,
        tags: ['books'],
        params: z.object({ termId: z.string().min(1).max(1024), classId: z.string().min(1).max(1024) }),
        querystring: z.object({ filename: z.string().max(255).optional() }),
        response: {
          200: bookSchema,
          400: problemSchema,
          413: problemSchema,
          415: problemSchema,
          507: problemSchema,
        },
      },
      // Streamed to disk, not held: outside the in-flight body budget, inside its own limits.
      config: { streamsBody: true },
      // Too large by its own account: refused before a byte of it is read.
      onRequest: async (request, reply) => {
        const declared = Number(request.headers['content-length'] ?? 0);
        if (declared > config.MAX_BOOK_BYTES) {
          reply.header('connection', 'close');
          return sendProblem(
            reply,
            problem(413, `The file is larger than the limit of ${config.MAX_BOOK_BYTES} bytes.`),
          );
        }
      },
    },
    async (request, reply) => {
      const body = request.body as Readable | undefined;
      if (!body || typeof (body as Readable).pipe !== 'function') {
        return sendProblem(
          reply,
          problem(415, 'Send the PDF as the body, with Content-Type: application/pdf.'),
        );
      }
      // The library as a whole has a size limit too (MAX_LIBRARY_BYTES).
      const room = config.MAX_LIBRARY_BYTES - (await store.books.totalBytes());
      const declared = Number(request.headers['content-length'] ?? 0);
      if (room <= 0 || declared > room) {
        reply.header('connection', 'close');
        return sendProblem(reply, libraryFull(config, room));
      }
      const { termId, classId } = request.params;
      const outcome = await storeUpload(app, body, room, {
        termId,
        classId,
        filename: request.query.filename ?? `${termId}-${classId}.pdf`,
      });
      if ('refused' in outcome) {
        const err = outcome.refused;
        // The rest of an oversized body is not read; the connection is closed after the answer.
        if (err.status === 413 || err.status === 507) reply.header('connection', 'close');
        return sendProblem(reply, problem(err.status, err.message));
      }
      const { row, previous } = outcome;
      const book = toBook(row, publicBaseUrl(config, request).base);
      await app.audit(request, {
        action: 'book-upload',
        target: `book ${book.id} (term ${termId}, class ${classId})`,
        details: {
          filename: book.filename,
          size: book.size,
          sha256: book.sha256,
          ...(previous ? { replaced: { filename: previous.filename, sha256: previous.sha256 } } : {}),
        },
      });
      return book;
    },
  );
  app.delete(
    '/books/:id',
    {
      schema: {
        summary: 'Remove a book',
        tags: ['books'],
        params: idParams,
        response: { 404: problemSchema },
      },
    },
    async (request, reply) => {
      const removed = await removeBook(app, request.params.id);
      if (!removed) return sendProblem(reply, problem(404, `There is no book ${request.params.id}.`));
      await app.audit(request, {
        action: 'book-delete',
        target: `book ${removed.id} (term ${removed.term_id}, class ${removed.class_id})`,
        details: { filename: removed.filename, size: removed.size, sha256: removed.sha256 },
      });
      return (reply as FastifyReply).code(204).send();
    },
  );
  app.get(
    '/books/:id/file',
    {
      schema: {
        summary: 'Open a book (the PDF, inline)',
        tags: ['books'],
        params: idParams,
        produces: ['application/pdf'],
        response: { 404: problemSchema },
      },
    },
    async (request, reply) => {
      const book = await store.books.findById(request.params.id);
      if (!book) return sendProblem(reply, problem(404, `There is no book ${request.params.id}.`));
      const served = serveBook(bookBlobs, book, {
        ifNoneMatch: request.headers['if-none-match'],
        range: request.headers.range,
      });
      const { body } = served;
      if (body) {
        // A download under way ends with its session, as an export does (docs/security.md).
        const unwatch = endWithSession(app, request, () =>
          body.destroy(new Error('the session ended during the download')),
        );
        body.once('close', unwatch);
      }
      return (reply as FastifyReply).code(served.status).headers(served.headers).send(body);
    },
  );
};

const libraryFull = (config: FastifyInstance['config'], room: number) =>
  problem(
    507,
    `The book library is full: it may hold ${config.MAX_LIBRARY_BYTES} bytes and has ${Math.max(0, room)} left. Remove books no longer needed, or raise MAX_LIBRARY_BYTES.`,
  );

/** What came of an upload: refused as it arrived (too large, not a PDF), or the book it made. */
type Upload = { refused: UploadError } | { row: BookRow; previous: BookRow | undefined };

/**
 * Stores an upload as the book of its term and class, within `room` bytes of the library, and
 * removes the bytes of the book it replaces when no other book uses them. One upload or deletion
 * at a time, on every instance: a deletion must not remove bytes an upload of the same file has
 * just found stored and is about to point a book at.
 */
function storeUpload(
  app: FastifyInstance,
  body: Readable,
  room: number,
  book: { termId: string; classId: string; filename: string },
): Promise<Upload> {
  const { store, config, bookBlobs } = app;
  return store.serially('books', async (): Promise<Upload> => {
    let stored: { sha256: string; size: number };
    try {
      stored = await bookBlobs.put(body, Math.min(config.MAX_BOOK_BYTES, room), (limit) =>
        limit < config.MAX_BOOK_BYTES ? libraryFull(config, room).detail : undefined,
      );
    } catch (err) {
      if (err instanceof UploadError) return { refused: err };
      throw err;
    }
    const previous = await store.books.find(book.termId, book.classId);
    const row = await store.books.upsert({
      term_id: book.termId,
      class_id: book.classId,
      sha256: stored.sha256,
      size: stored.size,
      filename: book.filename.replace(/[\r\n]/g, ' '),
      uploaded_at: Date.now(),
    });
    if (previous && previous.sha256 !== stored.sha256 && (await store.books.usesOf(previous.sha256)) === 0) {
      await bookBlobs.remove(previous.sha256);
    }
    return { row, previous };
  });
}

/** Removes a book, and its bytes when no other book uses them (one at a time, as storeUpload). */
function removeBook(app: FastifyInstance, id: number): Promise<BookRow | undefined> {
  const { store, bookBlobs } = app;
  return store.serially('books', async () => {
    const row = await store.books.remove(id);
    if (row && (await store.books.usesOf(row.sha256)) === 0) await bookBlobs.remove(row.sha256);
    return row;
  });
}
