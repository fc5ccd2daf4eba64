import { Readable } from 'node:stream';
import {
  CALL_COUNT_BOUND,
  type CallFilters,
  callCountSchema,
  callDetailSchema,
  callFiltersSchema,
  callListQuerySchema,
  callListSchema,
  checkParam,
  exportQuerySchema,
  problemSchema,
  type TextSearch,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { endWithSession } from '../../auth/session-watch.js';
import {
  type CallQuery,
  matchesCall,
  type RowScan,
  SearchBusyError,
  SearchClosedError,
  type TextSearchPage,
} from '../../history/index.js';
import { PHONE_PARAM, searchedAs } from '../../history/typed-phone.js';
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
// Rows read per query while exporting: sized so that a batch's text comes to about
// EXPORT_BATCH_BYTES (from the previous batch's bytes per row), within these bounds. A batch's
// text is held whole (one Buffer), so memory stays flat whatever the total; fewer, larger batches
// mean fewer queries and less per-batch garbage living long enough to be promoted. A JSON row
// carries the raw request and response (up to RECORD_MAX_BYTES each, 64 KiB by default): its
// bound keeps a batch of such rows near 32 MB, where a batch that follows small rows could reach it.
const EXPORT_BATCH = { first: 100, min: 100, max: { csv: 1000, json: 250 } } as const;
const EXPORT_BATCH_BYTES = 512 * 1024;

/**
 * An export batch's text, written straight into a Buffer (UTF-8) as its rows come: no string of
 * the whole batch is built. Starts at `bytes` (the previous batch's size: no copy once the first
 * batch has grown to fit) and grows by doubling; `take()` answers what was written.
 */
class BatchText {
  #buffer: Buffer;
  #length = 0;

  constructor(start: string, bytes = 16 * 1024) {
    this.#buffer = Buffer.allocUnsafe(bytes);
    if (start) this.write(start);
  }

  get capacity(): number {
    return this.#buffer.length;
  }

  write(text: string): void {
    // A UTF-16 unit takes at most 3 bytes in UTF-8 (a surrogate pair 4 for 2 units).
    const room = this.#length + text.length * 3;
    if (room > this.#buffer.length) {
      const bigger = Buffer.allocUnsafe(Math.max(room, 2 * this.#buffer.length));
      this.#buffer.copy(bigger, 0, 0, this.#length);
      this.#buffer = bigger;
    }
    this.#length += this.#buffer.write(text, this.#length);
  }

  take(): Buffer {
    return this.#buffer.subarray(0, this.#length);
  }
}

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

/**
 * How a search for a phone number typed as text went: complete (the phone's index read to the
 * page's end), the calls read, the oldest of them; and the number searched for, which the console
 * shows.
 */
const phoneSearch = (rows: readonly CallSummaryRow[], phone: string): TextSearch => {
  const oldest = rows[rows.length - 1];
  return {
    complete: true,
    scanned: rows.length,
    scannedBack: oldest ? new Date(oldest.at).toISOString() : null,
    phone,
  };
};

/** Call history: list with filters and keyset paging, one call, the live tail, and exports. */
export const callRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store, history, outbox } = app;
  const budgetMs = app.config.SEARCH_BUDGET_MS;
  /**
   * The filters as History searches them: a phone number typed as the search text is the Phone
   * filter's lookup (`phone`: the number, E.164), another text free text (history/typed-phone.ts).
   */
  const queryOf = (filters: CallFilters): { query: CallQuery; phone?: string } => {
    const read = searchedAs(filters, app.config.DEFAULT_PHONE_REGION);
    return { query: toQuery(read.filters), phone: read.phone };
  };
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
  // The phone filter as calls record it (E.164), whatever way staff wrote it: `07911 123456`
  // read in DEFAULT_PHONE_REGION; a text that is no phone number is refused in the filter's terms.
  app.addHook('preHandler', async (request, reply) => {
    const query = request.query as { phone?: string } | undefined;
    if (query?.phone === undefined) return;
    const checked = checkParam(PHONE_PARAM, query.phone, {
      defaultPhoneRegion: app.config.DEFAULT_PHONE_REGION,
      wording: 'staff',
    });
    if (!checked.ok)
      return sendProblem(reply, problem(400, checked.message, { errors: { phone: checked.message } }));
    query.phone = checked.value;
  });

  app.get(
    '/calls',
    {
      schema: {
        summary: 'List calls, newest first',
        description:
          "Filters combine with AND. Pass `nextCursor` back as `cursor` for the next page. A `q` that is wholly a phone number (as `phone` takes it) is a search for that number's calls, as `phone` finds them, complete; `search.phone` names the number (in double quotes it is free text). A free-text search (`q`) scans newest first for at most SEARCH_BUDGET_MS; when it stops before the page is full, `search.complete` is false, `search.scannedBack` says how far back it got and `nextCursor` continues the scan. 503 (with Retry-After) when too many free-text searches run at once.",
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
      const { query, phone } = queryOf(filters);
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
        // A number typed as text: found through the phone's index, to the end, whatever the budget.
        ...(phone === undefined ? {} : { search: phoneSearch(rows, phone) }),
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
      const { query } = queryOf(request.query);
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
      const { query } = queryOf(request.query);
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
      const { query } = queryOf(filters);
      const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
      // Pull-based: a batch is read only when the client has taken the previous one (one push per
      // read()), and each row is written into the batch's Buffer as the database hands it over:
      // no row, and no text of a batch, outlives its turn, so memory stays flat however many calls.
      let text = new BatchText(format === 'csv' ? CSV_HEADER : '[');
      let written = 0;
      let rows = 0;
      let batchSize: number = EXPORT_BATCH.first;
      const toText =
        format === 'csv'
          ? (row: CallSummaryRow) => {
              text.write(csvLine(row));
              rows++;
            }
          : (row: CallRow) => {
              rows++;
              text.write(written === 0 ? '\n' : ',\n');
              text.write(detailJson(row));
              written++;
            };
      // With free text this takes a slot in the search worker now, or throws: answer 503 then.
      let scan: RowScan;
      try {
        scan = history.scanRows(
          query,
          { batchSize: EXPORT_BATCH.first, summaries: format === 'csv' },
          toText as (row: CallSummaryRow) => void,
        );
      } catch (err) {
        return searchUnavailable(reply, err, budgetMs);
      }
      // An export under way ends with its session (a logout, a user disabled) like the live feed.
      const unwatch = endWithSession(app, request, () =>
        body.destroy(new Error('the session ended during the export')),
      );
      const body = new Readable({
        highWaterMark: 64 * 1024,
        read() {
          scan
            .next(batchSize)
            .then((more) => {
              if (!more && format === 'json') text.write('\n]\n');
              const chunk = text.take();
              if (rows > 0) {
                const perRow = Math.max(1, chunk.length / rows);
                batchSize = Math.round(
                  Math.min(EXPORT_BATCH.max[format], Math.max(EXPORT_BATCH.min, EXPORT_BATCH_BYTES / perRow)),
                );
              }
              rows = 0;
              text = new BatchText('', text.capacity);
              if (chunk.length > 0) this.push(chunk);
              if (!more) {
                unwatch();
                this.push(null);
              }
            })
            .catch((err: unknown) => this.destroy(err as Error));
        },
        destroy(err, callback) {
          unwatch();
          scan.close();
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
      const delivery = (await outbox.deliveries.ofCalls([row])).get(row.id) ?? null;
      return { ...toDetail(row), delivery };
    },
  );
};
