import {
  CALL_COUNT_BOUND,
  type CallFilters,
  callCountSchema,
  callDetailSchema,
  callFiltersSchema,
  callListQuerySchema,
  callListSchema,
  checkParam,
  problemSchema,
  type TextSearch,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { endWithSession } from '../../auth/session-watch.js';
import { countCalls } from '../../history/call-count.js';
import { type CallQuery, matchesCall, type TextSearchPage } from '../../history/index.js';
import { PHONE_PARAM, searchedAs } from '../../history/typed-phone.js';
import { problem, sendProblem } from '../../http/problem.js';
import type { CallRow, CallSummaryRow } from '../../store/index.js';
import { exportRoute } from './call-export.js';
import {
  decodeCursor,
  encodeCursor,
  schoolNamesOf,
  schoolOf,
  searchUnavailable,
  toDetail,
  toQuery,
  toSummary,
  withDeliveries,
} from './call-mapping.js';
import { staffScope } from './staff-scope.js';
import type { ZodApp } from './zod-app.js';

const HEARTBEAT_MS = 15_000;

/** What History's routes share. */
interface CallRouteContext {
  readonly app: ZodApp;
  /**
   * The filters as History searches them, within the staff user's schools (staffScope): a phone
   * number typed as the search text is the Phone filter's lookup (`phone`: the number, E.164),
   * another text free text (history/typed-phone.ts).
   */
  readonly queryOf: (filters: CallFilters, request: FastifyRequest) => { query: CallQuery; phone?: string };
  /** SEARCH_BUDGET_MS: how long a free-text search page scans; the Retry-After of a 503 when the worker is busy. */
  readonly budgetMs: number;
  /** Open live tails, ended before the server closes so that shutdown is not held up by them. */
  readonly tails: Set<() => void>;
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

/** Call history: list with filters and keyset paging, the count, one call, the live tail, and exports. */
export const callRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const ctx: CallRouteContext = {
    app,
    queryOf: (filters, request) => {
      const read = searchedAs(filters, app.config.DEFAULT_PHONE_REGION);
      return { query: toQuery(read.filters, staffScope(request)), phone: read.phone };
    },
    budgetMs: app.config.SEARCH_BUDGET_MS,
    tails: new Set(),
  };
  const { tails } = ctx;
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

  listRoute(ctx);
  countRoute(ctx);
  liveTailRoute(ctx);
  exportRoute(ctx);
  callPageRoute(ctx);
};

/** GET /calls: a page of calls, newest first, or of a free-text search. */
function listRoute({ app, queryOf, budgetMs }: CallRouteContext): void {
  const { history, outbox, store } = app;
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
      const { query, phone } = queryOf(filters, request);
      if (query.q) {
        let found: TextSearchPage;
        try {
          found = await history.searchText({ ...query, q: query.q }, { limit, after, budgetMs });
        } catch (err) {
          return searchUnavailable(reply, err, budgetMs);
        }
        return {
          items: await withDeliveries(found.rows, outbox.deliveries, store.schools),
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
        items: await withDeliveries(page, outbox.deliveries, store.schools),
        nextCursor: rows.length > limit && last ? encodeCursor({ at: last.at, id: last.id }) : null,
        // A number typed as text: found through the phone's index, to the end, whatever the budget.
        ...(phone === undefined ? {} : { search: phoneSearch(rows, phone) }),
      };
    },
  );
}

/** GET /calls/count: how many calls the filters match, bounded. */
function countRoute({ app, queryOf }: CallRouteContext): void {
  const { store } = app;
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
      const { query } = queryOf(request.query, request);
      if (query.q) {
        return sendProblem(
          reply,
          problem(400, 'Calls found by free text are not counted.', { errors: { q: 'is not counted' } }),
        );
      }
      return countCalls(store.reads, query, CALL_COUNT_BOUND);
    },
  );
}

/** GET /calls/stream: the live tail, as server-sent events. */
function liveTailRoute({ app, queryOf, tails }: CallRouteContext): void {
  const { history } = app;
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
      const { query } = queryOf(request.query, request);
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
}

/** GET /calls/:id: one call with its raw messages and its delivery. */
function callPageRoute({ app }: CallRouteContext): void {
  const { history, outbox, store } = app;
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
      // Another school's call is not there for a user limited to schools: the same 404.
      const row = await history.findById(request.params.id, staffScope(request));
      if (!row) return sendProblem(reply, problem(404, `There is no call ${request.params.id}.`));
      const [states, names] = await Promise.all([
        outbox.deliveries.ofCalls([row]),
        schoolNamesOf([row], store.schools),
      ]);
      return {
        ...toDetail(row),
        delivery: states.get(row.id) ?? null,
        school: schoolOf(row.school_id, names),
      };
    },
  );
}
