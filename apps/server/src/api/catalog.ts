import type { Readable } from 'node:stream';
import {
  bookSchema,
  missingTemplatesSchema,
  problemSchema,
  schoolInputSchema,
  schoolSchema,
  TEMPLATE_MATCH_RULE,
  templateInputSchema,
  templateSchema,
  unknownPlaceholders,
  unknownPlaceholdersMessage,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { publicBaseUrl } from '../asmx/base-url.js';
import { changes } from '../auth/audit-diff.js';
import { UploadError } from '../books/blobs.js';
import { serveBook } from '../books/serve.js';
import { problem, sendProblem } from '../http/problem.js';
import { allowedIpsColumn, normalizeBaseUrl } from '../operations/schools.js';
import type { BookRow, SchoolRow, TemplateRow } from '../store/index.js';
import { toBook, toSchool, toTemplate } from './catalog-mapping.js';

const idParams = z.object({ id: z.coerce.number().int().positive() });

/** Types received without a template: the calls of this many days back… */
const MISSING_TEMPLATE_DAYS = 30;
/** …at most this many of them, the newest (a bound on the work, however long the history). */
const MISSING_TEMPLATE_CALLS = 5000;
/** The types listed, most sent first. */
const MISSING_TEMPLATE_TYPES = 50;

/** A unique-constraint violation, whichever the database. */
const isConflict = (err: unknown): boolean =>
  err instanceof Error && /UNIQUE constraint|duplicate key/i.test(err.message);

/** Schools, notification templates and the book library, as the operations use them. */
export const catalogRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store, config, bookBlobs } = app;

  // --- schools -------------------------------------------------------------------------------
  const schoolValues = (input: z.output<typeof schoolInputSchema>) => ({
    name: input.name,
    base_url: normalizeBaseUrl(input.baseUrl) ?? input.baseUrl,
    topic_key: input.topicKey,
    allowed_ips: allowedIpsColumn(input.allowedIps),
  });
  /** A 409 naming what clashed (the base URL, the topic key or both) and with which school. */
  const schoolConflict = async (
    reply: FastifyReply,
    values: ReturnType<typeof schoolValues>,
    self?: number,
  ) => {
    const other = (row: SchoolRow | undefined) => (row && row.id !== self ? row : undefined);
    const [byUrl, byTopic] = await Promise.all([
      store.schools.findByBaseUrl(values.base_url).then(other),
      store.schools.findByTopicKey(values.topic_key).then(other),
    ]);
    const errors: Record<string, string> = {};
    if (byUrl) errors.baseUrl = `${byUrl.name} already has this base URL.`;
    if (byTopic) errors.topicKey = `${byTopic.name} already has this topic key: choose another.`;
    const detail =
      byUrl && byTopic
        ? byUrl.id === byTopic.id
          ? `${byUrl.name} already has this base URL (${values.base_url}) and this topic key (${values.topic_key}).`
          : `${byUrl.name} already has this base URL (${values.base_url}), and ${byTopic.name} this topic key (${values.topic_key}).`
        : byUrl
          ? `${byUrl.name} already has this base URL (${values.base_url}).`
          : byTopic
            ? `${byTopic.name} already has this topic key (${values.topic_key}): choose another.`
            : 'Another school already has that base URL or topic key.';
    return sendProblem(reply, problem(409, detail, { errors }));
  };

  app.get(
    '/schools',
    { schema: { summary: 'List schools', tags: ['schools'], response: { 200: z.array(schoolSchema) } } },
    async () => (await store.schools.list()).map(toSchool),
  );
  app.post(
    '/schools',
    {
      schema: {
        summary: 'Register a school',
        tags: ['schools'],
        body: schoolInputSchema,
        response: { 201: schoolSchema, 400: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      try {
        const school = toSchool(await store.schools.create(schoolValues(request.body)));
        await app.audit(request, {
          action: 'school-create',
          target: `school ${school.id} (${school.name})`,
          details: changes(undefined, school),
        });
        return reply.code(201).send(school);
      } catch (err) {
        if (isConflict(err)) return schoolConflict(reply, schoolValues(request.body));
        throw err;
      }
    },
  );
  app.put(
    '/schools/:id',
    {
      schema: {
        summary: 'Change a school',
        tags: ['schools'],
        params: idParams,
        body: schoolInputSchema,
        response: { 200: schoolSchema, 400: problemSchema, 404: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      try {
        const before = await store.schools.findById(request.params.id);
        const row = before && (await store.schools.update(before.id, schoolValues(request.body)));
        if (!before || !row)
          return sendProblem(reply, problem(404, `There is no school ${request.params.id}.`));
        const school = toSchool(row);
        await app.audit(request, {
          action: 'school-update',
          target: `school ${school.id} (${school.name})`,
          details: changes(toSchool(before), school),
        });
        return school;
      } catch (err) {
        if (isConflict(err)) return schoolConflict(reply, schoolValues(request.body), request.params.id);
        throw err;
      }
    },
  );
  app.delete(
    '/schools/:id',
    {
      schema: {
        summary: 'Remove a school',
        tags: ['schools'],
        params: idParams,
        response: { 404: problemSchema },
      },
    },
    async (request, reply) => {
      const before = await store.schools.findById(request.params.id);
      if (!before || !(await store.schools.remove(before.id))) {
        return sendProblem(reply, problem(404, `There is no school ${request.params.id}.`));
      }
      await app.audit(request, {
        action: 'school-delete',
        target: `school ${before.id} (${before.name})`,
        details: changes(toSchool(before), {}),
      });
      return (reply as FastifyReply).code(204).send();
    },
  );

  // --- templates -----------------------------------------------------------------------------
  /** A 409 naming the template that already answers the type (types match whatever their case). */
  const templateConflict = (reply: FastifyReply, type: string, existing: TemplateRow | undefined) => {
    const message = existing
      ? existing.type === type
        ? `There is already a template for ${type}: edit that one.`
        : `The ${existing.type} template already answers ${type}: types match whatever their case and surrounding spaces. Edit that one.`
      : 'There is already a template for that type.';
    return sendProblem(reply, problem(409, message, { errors: { type: message } }));
  };
  /** The template that would answer `type`, other than the one being saved. */
  const sameType = async (type: string, self?: number) => {
    const found = await store.templates.findByType(type);
    return found && found.id !== self ? found : undefined;
  };
  /** A 400 when the title or body uses placeholders the server does not fill. */
  const placeholderProblem = (reply: FastifyReply, input: { title: string; body: string }) => {
    const errors: Record<string, string> = {};
    for (const field of ['title', 'body'] as const) {
      const unknown = unknownPlaceholders(input[field]);
      if (unknown.length > 0) errors[field] = unknownPlaceholdersMessage(unknown);
    }
    const fields = Object.entries(errors);
    if (fields.length === 0) return undefined;
    const detail = fields.map(([field, message]) => `In the ${field}: ${message}`).join(' ');
    return sendProblem(reply, problem(400, detail, { errors }));
  };

  app.get(
    '/templates',
    {
      schema: {
        summary: 'List notification templates',
        description: TEMPLATE_MATCH_RULE,
        tags: ['templates'],
        response: { 200: z.array(templateSchema) },
      },
    },
    async () => (await store.templates.list()).map(toTemplate),
  );
  app.get(
    '/templates/missing',
    {
      schema: {
        summary: 'Notification types received that no template answers',
        description: `Types sent by successful SendNotificationType calls of the last ${MISSING_TEMPLATE_DAYS} days (the newest ${MISSING_TEMPLATE_CALLS} calls at most) that no template matches, so that they got the generic template (*): the ${MISSING_TEMPLATE_TYPES} most sent, each with how it was spelt, how often and when last. ${TEMPLATE_MATCH_RULE}`,
        tags: ['templates'],
        response: { 200: missingTemplatesSchema },
      },
    },
    async () => {
      const since = Date.now() - MISSING_TEMPLATE_DAYS * 86_400_000;
      const { scanned, types } = await store.templates.typesWithoutTemplate({
        since,
        limit: MISSING_TEMPLATE_CALLS,
      });
      return {
        since: new Date(since).toISOString(),
        limit: MISSING_TEMPLATE_CALLS,
        scanned,
        limited: scanned >= MISSING_TEMPLATE_CALLS,
        types: types.slice(0, MISSING_TEMPLATE_TYPES).map((t) => ({
          type: t.type,
          spellings: [...t.spellings],
          count: t.count,
          lastSeenAt: new Date(t.lastSeenAt).toISOString(),
        })),
        more: Math.max(0, types.length - MISSING_TEMPLATE_TYPES),
      };
    },
  );
  app.post(
    '/templates',
    {
      schema: {
        summary: 'Add a template for a notification type',
        description: `${TEMPLATE_MATCH_RULE} A type that differs from an existing template's only so is a 409; a placeholder other than the known ones is a 400.`,
        tags: ['templates'],
        body: templateInputSchema,
        response: { 201: templateSchema, 400: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const refused = placeholderProblem(reply, request.body);
      if (refused) return refused;
      const existing = await sameType(request.body.type);
      if (existing) return templateConflict(reply, request.body.type, existing);
      try {
        const template = toTemplate(await store.templates.create(request.body));
        await app.audit(request, {
          action: 'template-create',
          target: `template ${template.id} (${template.type})`,
          details: changes(undefined, template),
        });
        return reply.code(201).send(template);
      } catch (err) {
        if (isConflict(err))
          return templateConflict(reply, request.body.type, await sameType(request.body.type));
        throw err;
      }
    },
  );
  app.put(
    '/templates/:id',
    {
      schema: {
        summary: 'Change a template',
        description: `${TEMPLATE_MATCH_RULE} A type another template already answers is a 409; a placeholder other than the known ones is a 400.`,
        tags: ['templates'],
        params: idParams,
        body: templateInputSchema,
        response: { 200: templateSchema, 400: problemSchema, 404: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      try {
        const current = await store.templates.findById(request.params.id);
        if (current?.type === '*' && request.body.type !== '*') {
          return sendProblem(reply, problem(409, 'The generic template (*) keeps its type.'));
        }
        const refused = current && placeholderProblem(reply, request.body);
        if (refused) return refused;
        const existing = current && (await sameType(request.body.type, current.id));
        if (existing) return templateConflict(reply, request.body.type, existing);
        const row = current && (await store.templates.update(current.id, request.body));
        if (!current || !row)
          return sendProblem(reply, problem(404, `There is no template ${request.params.id}.`));
        const template = toTemplate(row);
        await app.audit(request, {
          action: 'template-update',
          target: `template ${template.id} (${template.type})`,
          details: changes(toTemplate(current), template),
        });
        return template;
      } catch (err) {
        if (isConflict(err))
          return templateConflict(
            reply,
            request.body.type,
            await sameType(request.body.type, request.params.id),
          );
        throw err;
      }
    },
  );
  app.delete(
    '/templates/:id',
    {
      schema: {
        summary: 'Remove a template',
        description: 'Its type then gets the generic template (*), which cannot be removed.',
        tags: ['templates'],
        params: idParams,
        response: { 404: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const current = await store.templates.findById(request.params.id);
      if (!current) return sendProblem(reply, problem(404, `There is no template ${request.params.id}.`));
      if (current.type === '*')
        return sendProblem(reply, problem(409, 'The generic template (*) cannot be removed.'));
      await store.templates.remove(current.id);
      await app.audit(request, {
        action: 'template-delete',
        target: `template ${current.id} (${current.type})`,
        details: changes(toTemplate(current), {}),
      });
      return (reply as FastifyReply).code(204).send();
    },
  );

  // --- books ---------------------------------------------------------------------------------
  // Uploads arrive as a raw PDF body, streamed to disk, never buffered.
  for (const type of ['application/pdf', 'application/octet-stream']) {
    app.addContentTypeParser(type, (_request, payload, done) => done(null, payload));
  }

  const libraryFull = (room: number) =>
    problem(
      507,
      `The book library is full: it may hold ${config.MAX_LIBRARY_BYTES} bytes and has ${Math.max(0, room)} left. Remove books no longer needed, or raise MAX_LIBRARY_BYTES.`,
    );

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
        return sendProblem(reply, libraryFull(room));
      }
      // One upload or deletion at a time, on every instance: a deletion must not remove bytes
      // an upload of the same file has just found stored and is about to point a book at.
      type Outcome = { refused: UploadError } | { row: BookRow; previous: BookRow | undefined };
      const outcome = await store.serially('books', async (): Promise<Outcome> => {
        let stored: { sha256: string; size: number };
        try {
          stored = await bookBlobs.put(body, Math.min(config.MAX_BOOK_BYTES, room), (limit) =>
            limit < config.MAX_BOOK_BYTES ? libraryFull(room).detail : undefined,
          );
        } catch (err) {
          if (err instanceof UploadError) return { refused: err };
          throw err;
        }
        const { termId, classId } = request.params;
        const previous = await store.books.find(termId, classId);
        const row = await store.books.upsert({
          term_id: termId,
          class_id: classId,
          sha256: stored.sha256,
          size: stored.size,
          filename: (request.query.filename ?? `${termId}-${classId}.pdf`).replace(/[\r\n]/g, ' '),
          uploaded_at: Date.now(),
        });
        if (
          previous &&
          previous.sha256 !== stored.sha256 &&
          (await store.books.usesOf(previous.sha256)) === 0
        ) {
          await bookBlobs.remove(previous.sha256);
        }
        return { row, previous };
      });
      if ('refused' in outcome) {
        const err = outcome.refused;
        // The rest of an oversized body is not read; the connection is closed after the answer.
        if (err.status === 413 || err.status === 507) reply.header('connection', 'close');
        return sendProblem(reply, problem(err.status, err.message));
      }
      const { row, previous } = outcome;
      const { termId, classId } = request.params;
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
      const removed = await store.serially('books', async () => {
        const row = await store.books.remove(request.params.id);
        if (row && (await store.books.usesOf(row.sha256)) === 0) await bookBlobs.remove(row.sha256);
        return row;
      });
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
      return (reply as FastifyReply).code(served.status).headers(served.headers).send(served.body);
    },
  );
};
