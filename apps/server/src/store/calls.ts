import { EventEmitter } from 'node:events';
import type SQLite from 'better-sqlite3';
import {
  type ExpressionBuilder,
  type Insertable,
  type Kysely,
  type Selectable,
  type SelectQueryBuilder,
  sql,
} from 'kysely';
import type { NewDelivery } from './deliveries.js';
import type { Binding, CallsTable, Database, Outcome } from './schema.js';
import { createSearchWorker, type SearchWorker, type TextQuery } from './search.js';

export type NewCall = Insertable<CallsTable>;
export type CallRow = Selectable<CallsTable>;
/** A call without its raw request and response: what lists and the live tail carry. */
export type CallSummaryRow = Omit<CallRow, 'request' | 'response'>;

/** Filters over calls; times in epoch milliseconds, `to` exclusive. */
export interface CallQuery {
  readonly operation?: string | undefined;
  readonly binding?: Binding | undefined;
  readonly outcome?: Outcome | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  readonly ip?: string | undefined;
  /** Free text: a case-insensitive substring of the parameters, the raw request or response. */
  readonly q?: string | undefined;
}

/** A position in the newest-first order: the last row of the previous page. */
export interface CallCursor {
  readonly at: number;
  readonly id: number;
}

/** A page of a free-text search, which may stop before the page is full (see `searchText`). */
export interface TextSearchPage {
  /** Matches, newest first, at most `limit`. */
  readonly rows: CallSummaryRow[];
  /** Where the next page starts; null when the history has been searched to its end. */
  readonly next: CallCursor | null;
  /** False when the time budget ran out first: `next` then continues the scan. */
  readonly complete: boolean;
  /** Calls examined for this page. */
  readonly scanned: number;
  /** When the oldest call examined came (epoch ms); null when none was examined. */
  readonly scannedBack: number | null;
}

export interface StatsRow {
  readonly bucket: number;
  readonly operation: string | null;
  readonly outcome: Outcome;
  readonly count: number;
}

export interface CallRepository {
  /**
   * Records a call; resolves with its id once the record is committed. Records arriving in the
   * same turn of the event loop are committed together in one transaction (group commit), so a
   * burst of concurrent requests pays for one commit, not one each.
   */
  record(call: NewCall, deliveries?: readonly NewDelivery[]): Promise<number>;
  findById(id: number): Promise<CallRow | undefined>;
  /**
   * Newest first (by time, then id), after `cursor`; keyset pagination, never OFFSET. Free text
   * (`q`) is searched in the search worker, to the end (no time budget: see `searchText`).
   */
  search(
    query: CallQuery,
    page: { limit: number; after?: CallCursor | undefined },
  ): Promise<CallSummaryRow[]>;
  /**
   * A free-text search (`query.q`) in the search worker, off the main thread and its connection:
   * scans newest first from `after` until `limit` matches or, when `budgetMs` is given, until that
   * much time has passed; then says how far back it got and where to continue. Throws
   * SearchBusyError when the worker has no free slot.
   */
  searchText(
    query: CallQuery & { q: string },
    page: { limit: number; after?: CallCursor | undefined; budgetMs?: number | undefined },
  ): Promise<TextSearchPage>;
  /**
   * Every matching call, newest first, in batches read one at a time: constant memory. With free
   * text the batches come from the search worker (no time budget), and SearchBusyError is thrown
   * by this call, before anything is read.
   */
  scan(query: CallQuery, batchSize?: number): AsyncGenerator<CallRow[]>;
  /** As `scan`, without the raw request and response. */
  scanSummaries(query: CallQuery, batchSize?: number): AsyncGenerator<CallSummaryRow[]>;
  /** Counts per time bucket, operation and outcome. */
  stats(range: { from: number; to: number; bucketMs: number }): Promise<StatsRow[]>;
  /** When the newest `limit` successful calls of an operation from a caller since `since` came, newest first. */
  recentFrom(ip: string, operation: string, since: number, limit: number): Promise<number[]>;
  /**
   * Deletes calls older than `before` with their deliveries and attempts, at most `batch` calls
   * per transaction; returns how many calls went.
   */
  deleteOlderThan(before: number, batch?: number): Promise<number>;
  /** Newest first. */
  list(options: { limit: number }): Promise<CallRow[]>;
  count(): Promise<number>;
  /** Emits `recorded` with the calls of each commit, once committed (for the live tail). */
  readonly events: EventEmitter<{ recorded: [CallRow[]] }>;
  /** Waits until every record handed in so far is committed. */
  flush(): Promise<void>;
  /** The free-text search worker (started on first use). */
  readonly searchWorker: Pick<SearchWorker, 'jobs' | 'running'>;
  /** Ends the search worker and the searches under way in it. */
  close(): Promise<void>;
}

const COLUMNS = [
  'at',
  'group_name',
  'operation',
  'binding',
  'caller_ip',
  'user_agent',
  'params',
  'outcome',
  'status',
  'error',
  'duration_ms',
  'request',
  'request_bytes',
  'response',
  'response_bytes',
  'note',
] as const satisfies readonly (keyof NewCall)[];

/** Columns a new call may leave out (better-sqlite3 wants every named parameter bound). */
const NULLABLE_DEFAULTS = { operation: null, user_agent: null, params: null, error: null, note: null };

type SummaryColumn = Exclude<(typeof COLUMNS)[number], 'request' | 'response'>;
/** Everything but the raw messages, which lists and the live tail do not carry. */
const SUMMARY_COLUMNS: readonly ('id' | SummaryColumn)[] = [
  'id',
  ...COLUMNS.filter((c): c is SummaryColumn => c !== 'request' && c !== 'response'),
];

/** Free text given (an empty `q` filters nothing): the search goes to the worker. */
const hasText = (query: CallQuery): query is CallQuery & { q: string } =>
  query.q !== undefined && query.q !== '';

/** The query as the worker reads it: plain data for structured clone. */
const textQuery = (query: CallQuery & { q: string }): TextQuery => ({
  operation: query.operation,
  binding: query.binding,
  outcome: query.outcome,
  from: query.from,
  to: query.to,
  ip: query.ip,
  q: query.q,
});

function applyFilters<O>(
  qb: SelectQueryBuilder<Database, 'calls', O>,
  query: CallQuery,
): SelectQueryBuilder<Database, 'calls', O> {
  let out = qb;
  if (query.operation !== undefined) out = out.where('operation', '=', query.operation);
  if (query.binding !== undefined) out = out.where('binding', '=', query.binding);
  if (query.outcome !== undefined) out = out.where('outcome', '=', query.outcome);
  if (query.from !== undefined) out = out.where('at', '>=', query.from);
  if (query.to !== undefined) out = out.where('at', '<', query.to);
  if (query.ip !== undefined) out = out.where('caller_ip', '=', query.ip);
  // Free text (`q`) is never matched on this connection: see search-worker.mjs.
  return out;
}

// A row-value comparison, so that SQLite and PostgreSQL seek the (…, at, id) index to the cursor
// instead of re-reading every newer row for each page.
const after = (cursor: CallCursor) => (eb: ExpressionBuilder<Database, 'calls'>) =>
  eb(eb.refTuple('at', 'id'), '<', eb.tuple(cursor.at, cursor.id));

interface Pending {
  readonly call: NewCall;
  readonly deliveries: readonly NewDelivery[] | undefined;
  readonly resolve: (id: number) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * The call repository on SQLite. The insert, the hot statement of every request, is prepared once
 * and run on better-sqlite3 directly, one transaction per batch; reads go through Kysely.
 */
export function createCallRepository(
  db: Kysely<Database>,
  sqlite: SQLite.Database,
  deliveries: { insertFor(callId: number, items: readonly NewDelivery[]): void; notify(): void },
  options: { searchMaxJobs?: number } = {},
): CallRepository {
  let queue: Pending[] = [];
  // Free text (a LIKE over raw messages, up to gigabytes) runs in a worker thread on its own
  // read-only connection to the same WAL file; everything else stays on this connection.
  const searchWorker = createSearchWorker({ file: sqlite.name, maxJobs: options.searchMaxJobs });
  const insert = sqlite.prepare(
    `INSERT INTO calls (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})`,
  );
  // A call and the deliveries it causes are committed together (the outbox): a 200 means both are.
  const insertAll = sqlite.transaction((batch: readonly Pending[]) =>
    batch.map(({ call, deliveries: items }) => {
      const id = Number(insert.run({ ...NULLABLE_DEFAULTS, ...call }).lastInsertRowid);
      if (items && items.length > 0) deliveries.insertFor(id, items);
      return id;
    }),
  );

  const events = new EventEmitter<{ recorded: [CallRow[]] }>();
  // One listener per live-tail client.
  events.setMaxListeners(0);

  function commit(batch: Pending[]): void {
    let ids: number[];
    try {
      ids = insertAll(batch);
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(ids[i] as number);
    if (batch.some((p) => p.deliveries && p.deliveries.length > 0)) deliveries.notify();
    if (events.listenerCount('recorded') > 0) {
      events.emit(
        'recorded',
        batch.map(({ call }, i) => ({ ...NULLABLE_DEFAULTS, ...call, id: ids[i] as number }) as CallRow),
      );
    }
  }

  async function* scanBy<R extends CallSummaryRow>(
    query: CallQuery,
    batchSize: number,
    columns: (qb: SelectQueryBuilder<Database, 'calls', object>) => SelectQueryBuilder<Database, 'calls', R>,
  ): AsyncGenerator<R[]> {
    let cursor: CallCursor | undefined;
    for (;;) {
      let qb = applyFilters(columns(db.selectFrom('calls')), query);
      if (cursor) qb = qb.where(after(cursor));
      const rows = await qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(batchSize).execute();
      if (rows.length === 0) return;
      yield rows;
      const last = rows[rows.length - 1] as R;
      cursor = { at: last.at, id: last.id };
      if (rows.length < batchSize) return;
    }
  }

  const oldCalls = sqlite.prepare('SELECT id FROM calls WHERE at < ? ORDER BY at LIMIT ?');
  const deleteAttempts = sqlite.prepare(
    'DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE call_id = ?)',
  );
  const deleteDeliveries = sqlite.prepare('DELETE FROM deliveries WHERE call_id = ?');
  const deleteCall = sqlite.prepare('DELETE FROM calls WHERE id = ?');
  const deleteBatch = sqlite.transaction((before: number, batch: number): number => {
    const ids = oldCalls.all(before, batch) as { id: number }[];
    for (const { id } of ids) {
      deleteAttempts.run(id);
      deleteDeliveries.run(id);
      deleteCall.run(id);
    }
    return ids.length;
  });

  let timer: NodeJS.Immediate | undefined;
  function commitQueued(): void {
    timer = undefined;
    const batch = queue;
    queue = [];
    commit(batch);
  }

  return {
    record(call, items) {
      return new Promise<number>((resolve, reject) => {
        queue.push({ call, deliveries: items, resolve, reject });
        timer ??= setImmediate(commitQueued);
      });
    },
    async flush() {
      if (timer) {
        clearImmediate(timer);
        commitQueued();
      }
    },
    events,
    findById(id) {
      return db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async search(query, page) {
      if (hasText(query)) {
        const found = await searchWorker.page<CallSummaryRow>({
          query: textQuery(query),
          after: page.after,
          want: page.limit,
          columns: SUMMARY_COLUMNS,
        });
        return found.rows;
      }
      let qb = applyFilters(db.selectFrom('calls').select(SUMMARY_COLUMNS), query);
      if (page.after) qb = qb.where(after(page.after));
      return qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(page.limit).execute();
    },
    async searchText(query, page) {
      // One more than the page: finding it tells that the page is full and more follow.
      const found = await searchWorker.page<CallSummaryRow>({
        query: textQuery(query),
        after: page.after,
        want: page.limit + 1,
        columns: SUMMARY_COLUMNS,
        budgetMs: page.budgetMs,
      });
      const rows = found.rows.slice(0, page.limit);
      const lastRow = rows[rows.length - 1];
      const scannedBack = found.last ? found.last.at : null;
      if (found.rows.length > page.limit && lastRow) {
        return {
          rows,
          next: { at: lastRow.at, id: lastRow.id },
          complete: true,
          scanned: found.scanned,
          scannedBack,
        };
      }
      if (found.stopped && found.last) {
        return { rows, next: found.last, complete: false, scanned: found.scanned, scannedBack };
      }
      return { rows, next: null, complete: true, scanned: found.scanned, scannedBack };
    },
    scan(query, batchSize = 500) {
      if (hasText(query)) return searchWorker.scan<CallRow>(textQuery(query), batchSize, '*');
      return scanBy(query, batchSize, (qb) => qb.selectAll());
    },
    scanSummaries(query, batchSize = 500) {
      if (hasText(query))
        return searchWorker.scan<CallSummaryRow>(textQuery(query), batchSize, SUMMARY_COLUMNS);
      return scanBy(query, batchSize, (qb) => qb.select(SUMMARY_COLUMNS));
    },
    searchWorker,
    close() {
      return searchWorker.close();
    },
    async stats({ from, to, bucketMs }) {
      const rows = await db
        .selectFrom('calls')
        .select((eb) => [
          // Integer literals: a bound JS number is a REAL to SQLite, which would not truncate.
          sql<number>`(${sql.ref('at')} / ${sql.lit(Math.trunc(bucketMs))}) * ${sql.lit(Math.trunc(bucketMs))}`.as(
            'bucket',
          ),
          'operation',
          'outcome',
          eb.fn.countAll<number>().as('count'),
        ])
        .where('at', '>=', from)
        .where('at', '<', to)
        .groupBy(['bucket', 'operation', 'outcome'])
        .orderBy('bucket')
        .execute();
      return rows.map((r) => ({ ...r, bucket: Number(r.bucket), count: Number(r.count) }));
    },
    async recentFrom(ip, operation, since, limit) {
      const rows = await db
        .selectFrom('calls')
        .select('at')
        .where('caller_ip', '=', ip)
        .where('at', '>=', since)
        .where('operation', '=', operation)
        .where('outcome', '=', 'ok')
        .orderBy('at', 'desc')
        .limit(limit)
        .execute();
      return rows.map((r) => Number(r.at));
    },
    async deleteOlderThan(before, batch = 2000) {
      let total = 0;
      for (;;) {
        const n = deleteBatch(before, batch);
        total += n;
        if (n < batch) return total;
        // Let requests in between batches: the store has one connection.
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
    list({ limit }) {
      return db.selectFrom('calls').selectAll().orderBy('id', 'desc').limit(limit).execute();
    },
    async count() {
      const row = await db
        .selectFrom('calls')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}
