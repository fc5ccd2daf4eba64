import { Readable } from 'node:stream';
import {
  CALL_COUNT_BOUND,
  callCountSchema,
  callDetailSchema,
  callFiltersSchema,
  callListQuerySchema,
  callListSchema,
  exportQuerySchema,
  problemSchema,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { endWithSession } from '../../auth/session-watch.js';
import { matchesCall, SearchBusyError, SearchClosedError, type TextSearchPage } from '../../history/index.js';
import { problem, sendProblem } from '../../http/problem.js';
import { countCalls } from '../../stats/call-stats.js';
import type { CallRow, CallSummaryRow } from '../../store/index.js';
import {
  CSV_HEADER,
  csvLine,
  decodeCursor,
  detailJson,
  encodeCursor,
  toDetail,
  toQuery,
  toSummary,
  withDeliveries,
} from './call-mapping.js';

const HEARTBEAT_MS = 15_000;
// Rows read per query while exporting: small batches keep memory flat whatever the total.
const EXPORT_BATCH = 100;

/**
 * A free-text search that could not run: the worker's slots are all taken (503, come back in a
 * moment) or the server is closing. Anything else is rethrown.
 */
function searchUnavailable(reply: FastifyReply, err: unknown, budgetMs: number): FastifyReply {
  if (err instanceof SearchBusyError) {
    return sendProblem(
      reply.header('retry-after', String(Math.max(1, Math.ceil(budgetMs / 1000)))),
      problem(
        503,
        'Too many free-text searches are running at once. Try again in a moment, or narrow the search by time, operation or binding so that it finishes sooner.',
      ),
    );
  }
  if (err instanceof SearchClosedError) {
    return sendProblem(reply.header('retry-after', '5'), problem(503, 'The server is shutting down.'));
  }
  throw err;
}

/** Call history: list with filters and keyset paging, one call, the live tail, and exports. */
export const callRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store, history, outbox } = app;
  const budgetMs = app.config.SEARCH_BUDGET_MS;
  // Open live tails, ended before the server closes so that shutdown is not held up by them.
  const tails = new Set<() => void>();
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    for (const end of tails) end();
  });
  // A search or export answered while the server closes ends its connection: a keep-alive socket
  // left idle after a long request would otherwise hold the shutdown until its grace period ends.
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });

  app.get(
    '/calls',
    {
      schema: {
        summary: 'List calls, newest first',
        description:
          'Filters combine with AND. Pass `nextCursor` back as `cursor` for the next page. A free-text search (`q`) scans newest first for at most SEARCH_BUDGET_MS; when it stops before the page is full, `search.complete` is false, `search.scannedBack` says how far back it got and `nextCursor` continues the scan. 503 (with Retry-After) when too many free-text searches run at once.',
        tags: ['calls'],
        querystring: callListQuerySchema,
        response: { 200: callListSchema, 400: problemSchema, 503: problemSchema },
      },
    },
    async (request, reply) => {
      const { limit, cursor, ...filters } = request.query;
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      if (cursor !== undefined && !after) {
        return sendProblem(
          reply,
          problem(400, 'The cursor is not one this API gave out.', { errors: { cursor: 'is invalid' } }),
        );
      }
      const query = toQuery(filters);
      if (query.q) {
        let found: TextSearchPage;
        try {
          found = await history.searchText({ ...query, q: query.q }, { limit, after, budgetMs });
        } catch (err) {
          return searchUnavailable(reply, err, budgetMs);
        }
        return {
          items: await withDeliveries(found.rows, outbox.deliveries),
          nextCursor: found.next ? encodeCursor(found.next) : null,
          search: {
            complete: found.complete,
            scanned: found.scanned,
            scannedBack: found.scannedBack === null ? null : new Date(found.scannedBack).toISOString(),
          },
        };
      }
      const rows = await history.search(query, { limit: limit + 1, after });
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        items: await withDeliveries(page, outbox.deliveries),
        nextCursor: rows.length > limit && last ? encodeCursor({ at: last.at, id: last.id }) : null,
      };
    },
  );

  app.get(
    '/calls/count',
    {
      schema: {
        summary: 'How many calls the filters match',
        description: `Counts up to ${CALL_COUNT_BOUND}; \`more\` says there are more. Free text (\`q\`) is not counted (400): its search runs under a time budget.`,
        tags: ['calls'],
        querystring: callFiltersSchema,
        response: { 200: callCountSchema, 400: problemSchema },
      },
    },
    async (request, reply) => {
      const query = toQuery(request.query);
      if (query.q) {
        return sendProblem(
          reply,
          problem(400, 'Calls found by free text are not counted.', { errors: { q: 'is not counted' } }),
        );
      }
      return countCalls(store.reads, query, CALL_COUNT_BOUND);
    },
  );

  app.get(
    '/calls/stream',
    {
      schema: {
        summary: 'Live tail of new calls (Server-Sent Events)',
        description:
          'Each call recorded from now on that passes the filters arrives as an event named `call` whose data is a CallSummary.',
        tags: ['calls'],
        querystring: callFiltersSchema,
        produces: ['text/event-stream'],
      },
    },
    (request, reply) => {
      const query = toQuery(request.query);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.write('retry: 3000\n: connected\n\n');
      const onRecorded = (rows: CallRow[]) => {
        for (const row of rows) {
          if (matchesCall(query, row))
            res.write(`event: call\nid: ${row.id}\ndata: ${JSON.stringify(toSummary(row))}\n\n`);
        }
      };
      history.live.events.on('recorded', onRecorded);
      const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
      // The feed carries phone numbers: it ends with its session, here or on another instance.
      const unwatch = endWithSession(app, request, () => end());
      const end = () => {
        clearInterval(heartbeat);
        unwatch();
        history.live.events.off('recorded', onRecorded);
        tails.delete(end);
        res.end();
      };
      tails.add(end);
      request.raw.on('close', end);
    },
  );

  app.get(
    '/calls/export',
    {
      schema: {
        summary: 'Export calls as CSV or JSON',
        description:
          'Every call that passes the filters, newest first, streamed. CSV has one row per call without raw messages; JSON is an array of CallDetail. With `q`, the search runs to the end (no time budget); 503 (with Retry-After) when too many free-text searches run at once.',
        tags: ['calls'],
        querystring: exportQuerySchema,
        produces: ['text/csv', 'application/json'],
      },
    },
    (request, reply) => {
      const { format, ...filters } = request.query;
      const query = toQuery(filters);
      const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
      // Pull-based: a batch is read only when the client has taken the previous one, and each
      // batch becomes one Buffer at once, so memory stays flat however many calls there are.
      // With free text this takes a slot in the search worker now, or throws: answer 503 then.
      let batches: AsyncGenerator<CallSummaryRow[] | CallRow[]>;
      try {
        batches =
          format === 'csv' ? history.scanSummaries(query, EXPORT_BATCH) : history.scan(query, EXPORT_BATCH);
      } catch (err) {
        return searchUnavailable(reply, err, budgetMs);
      }
      let started = false;
      let written = 0;
      // An export under way ends with its session (a logout, a user disabled) like the live feed.
      const unwatch = endWithSession(app, request, () =>
        body.destroy(new Error('the session ended during the export')),
      );
      const body = new Readable({
        highWaterMark: 64 * 1024,
        read() {
          batches
            .next()
            .then(({ value: rows, done }) => {
              let text = '';
              if (!started) text = format === 'csv' ? CSV_HEADER : '[';
              started = true;
              for (const row of done ? [] : rows) {
                text +=
                  format === 'csv'
                    ? csvLine(row)
                    : `${written === 0 ? '\n' : ',\n'}${detailJson(row as CallRow)}`;
                written++;
              }
              if (done && format === 'json') text += '\n]\n';
              if (text) this.push(Buffer.from(text));
              if (done) {
                unwatch();
                this.push(null);
              }
            })
            .catch((err: unknown) => this.destroy(err as Error));
        },
        destroy(err, callback) {
          unwatch();
          void batches.return(undefined);
          callback(err);
        },
      });
      return reply
        .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="calls-${stamp}.${format}"`)
        .header('cache-control', 'no-store')
        .send(body);
    },
  );

  app.get(
    '/calls/:id',
    {
      schema: {
        summary: 'One call, with its raw request and response',
        tags: ['calls'],
        params: z.object({ id: z.coerce.number().int().positive() }),
        response: { 200: callDetailSchema, 404: problemSchema },
      },
    },
    async (request, reply) => {
      const row = await history.findById(request.params.id);
      if (!row) return sendProblem(reply, problem(404, `There is no call ${request.params.id}.`));
      const delivery = (await outbox.deliveries.ofCalls([row.id])).get(row.id) ?? null;
      return { ...toDetail(row), delivery };
    },
  );
};
