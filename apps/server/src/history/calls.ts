import {
  CALL_SUMMARY_COLUMNS,
  type CallRow,
  type CallSummaryRow,
  inScope,
  type SchoolScope,
  type Store,
  selectCallRow,
} from '../store/index.js';
import { applyFilters, type CallCursor, type CallQuery, olderThan } from './call-filters.js';
import { type Alongside, deleteCallsOlderThan } from './call-retention.js';
import { type RowScan, type ScanSource, scanBy, scanRowsBy } from './call-scans.js';
import { createLiveTail, type LiveTail } from './live-tail.js';
import { createPgSearch } from './pg-search.js';
import { createSearchWorker, type SearchWorker, type TextQuery, type WorkerPage } from './search.js';
import { timeWindows } from './time-windows.js';

export type { CallCursor, CallQuery, CallRow, CallSummaryRow, RowScan };

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

export interface History {
  /**
   * One call; undefined when there is none, or when it is not in `scope` (another school's, or no
   * school's for staff limited to schools): the same answer, so that an id tells nothing.
   */
  findById(id: number, scope?: SchoolScope): Promise<CallRow | undefined>;
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
  /**
   * As `scan` (`summaries`: as `scanSummaries`), for exports: each `next()` reads one batch and
   * hands its rows to `each` one by one as the database gives them, so that no row outlives its
   * turn (on PostgreSQL they are read off the connection as they arrive, never gathered into a
   * result); it answers false once every row has been handed over. With free text the batches
   * come from the search worker, as `scan`'s.
   */
  scanRows<R extends CallSummaryRow>(
    query: CallQuery,
    options: { batchSize: number; summaries: boolean },
    each: (row: R) => void,
  ): RowScan;
  /** When the newest `limit` successful calls of an operation from a caller since `since` came, newest first. */
  recentFrom(ip: string, operation: string, since: number, limit: number): Promise<number[]>;
  /**
   * Deletes calls older than `before`, at most `batch` calls per transaction, each batch after
   * `alongside` has deleted in the same transaction what refers to them (their deliveries: the
   * outbox owns those); returns how many calls went.
   */
  deleteOlderThan(
    before: number,
    options?: {
      batch?: number;
      alongside?: Alongside;
    },
  ): Promise<number>;
  /** Newest first. */
  list(options: { limit: number }): Promise<CallRow[]>;
  count(): Promise<number>;
  /** Every call as it is committed, here and (PostgreSQL) on other instances. */
  readonly live: LiveTail;
  /** The free-text search: a worker thread on SQLite (started on first use), the pool on PostgreSQL. */
  readonly searchWorker: Pick<SearchWorker, 'jobs' | 'running'>;
  /** Ends the search worker and the searches under way in it, and the live tail. */
  close(): Promise<void>;
}

/** How far back a call page looks first, on PostgreSQL (findById). */
const RECENT_CALL_MS = 2 * 86_400_000;

/** Free text given (an empty `q` filters nothing): the search goes to the worker. */
const hasText = (query: CallQuery): query is TextQuery => query.q !== undefined && query.q !== '';

/**
 * A free-text search's page from what the search found, asked for one more than the page
 * (`limit + 1`): finding it tells that the page is full and more follow.
 */
function textSearchPage(found: WorkerPage<CallSummaryRow>, limit: number): TextSearchPage {
  const rows = found.rows.slice(0, limit);
  const lastRow = rows[rows.length - 1];
  const scannedBack = found.last ? found.last.at : null;
  if (found.rows.length > limit && lastRow) {
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
}

/**
 * History: the recorded calls as staff read them. Reads are Kysely queries, the same on both
 * databases; free text goes to the search worker (SQLite) or the chunked PostgreSQL search. The
 * calls are written by the call recorder (recording/), never here.
 *
 * Staff's reads (lists, search, counts, exports, call pages) use `store.reads`: the read replica
 * while it keeps up (DATABASE_READ_URL), else the primary. What must be current uses `store.db`:
 * a call page the replica does not have yet, the live tail, the AuthCode limit's `recentFrom`,
 * retention.
 */
export function createHistory(store: Store, options: { searchMaxJobs?: number } = {}): History {
  const { db, reads } = store;
  // Free text (a LIKE over raw messages, up to gigabytes): on SQLite in a worker thread on its own
  // read-only connection to the same WAL file; on PostgreSQL in the database's own processes.
  const searchWorker = store.sqlite
    ? createSearchWorker({ file: store.sqlite.name, maxJobs: options.searchMaxJobs })
    : createPgSearch(reads, {
        maxJobs: options.searchMaxJobs,
        windowsOf: (query, after) => windowsOf(query, after),
      });
  const live = createLiveTail(store);
  const windowsOf = callWindows(store.partitions);
  const source: ScanSource = { store, reads, windowsOf };

  return {
    async findById(id, scope) {
      const row = await callById(store, id);
      return row && inScope(scope, row.school_id) ? row : undefined;
    },
    async search(query, page) {
      if (hasText(query)) {
        const found = await searchWorker.page<CallSummaryRow>({
          query: query,
          after: page.after,
          want: page.limit,
          columns: CALL_SUMMARY_COLUMNS,
        });
        return found.rows;
      }
      return listByWindows(source, query, page);
    },
    async searchText(query, page) {
      // One more than the page: finding it tells that the page is full and more follow.
      const found = await searchWorker.page<CallSummaryRow>({
        query: query,
        after: page.after,
        want: page.limit + 1,
        columns: CALL_SUMMARY_COLUMNS,
        budgetMs: page.budgetMs,
      });
      return textSearchPage(found, page.limit);
    },
    scan(query, batchSize = 500) {
      if (hasText(query)) return searchWorker.scan<CallRow>(query, batchSize, '*');
      return scanBy(source, query, batchSize, selectCallRow);
    },
    scanSummaries(query, batchSize = 500) {
      if (hasText(query)) return searchWorker.scan<CallSummaryRow>(query, batchSize, CALL_SUMMARY_COLUMNS);
      return scanBy(source, query, batchSize, (qb) => qb.select(CALL_SUMMARY_COLUMNS));
    },
    scanRows(query, { batchSize, summaries }, each) {
      const handOver = each as (row: Record<string, unknown>) => void;
      if (hasText(query)) {
        const batches = searchWorker.scan<Record<string, unknown>>(
          query,
          batchSize,
          summaries ? CALL_SUMMARY_COLUMNS : '*',
        );
        return rowScanOf(batches, handOver);
      }
      return scanRowsBy(
        source,
        query,
        batchSize,
        (qb) => (summaries ? qb.select(CALL_SUMMARY_COLUMNS) : selectCallRow(qb)),
        handOver,
      );
    },
    live,
    searchWorker,
    close() {
      live.close();
      return searchWorker.close();
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
    deleteOlderThan: (before, options) => deleteCallsOlderThan(db, before, options),
    list({ limit }) {
      return selectCallRow(reads.selectFrom('calls')).orderBy('id', 'desc').limit(limit).execute();
    },
    async count() {
      const row = await reads
        .selectFrom('calls')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}

/**
 * The query in time windows, newest first (time-windows.ts); one window on SQLite. The delivery
 * filter too: in one query each failed delivery's call would be looked up in every partition, a
 * cost that grows with the calls kept; in a window, only in the window's
 * (docs/performance.md#history-on-partitions). Its windows are days whatever the partitions:
 * each reads its failed deliveries first (through `deliveries_failed_at`, migration 0021), and
 * then each one's call, so a month's window would look up a month's; a day inside a month's
 * partition is planned over that partition alone all the same.
 */
function callWindows(partitions: Store['partitions']) {
  return async (query: CallQuery, after?: CallCursor): Promise<CallQuery[]> =>
    partitions
      ? timeWindows(
          query,
          after,
          query.delivery === 'failed' ? 'day' : partitions.period,
          await partitions.oldest(),
          Date.now(),
        )
      : [query];
}

/** A call by its id, from the reads, else from the primary (whatever its school). */
async function callById(store: Store, id: number): Promise<CallRow | undefined> {
  const { db, reads, partitions } = store;
  const byId = (from: typeof db, since?: number) => {
    const qb = selectCallRow(from.selectFrom('calls')).where('id', '=', id);
    return (since === undefined ? qb : qb.where('at', '>=', since)).executeTakeFirst();
  };
  // Most call pages are of recent calls: on PostgreSQL the last two days' few partitions are
  // looked in first, then all of them (a lookup in each partition's key index: the fewer the better).
  const recent = partitions ? await byId(reads, Date.now() - RECENT_CALL_MS) : undefined;
  const row = recent ?? (await byId(reads));
  // Asked right after its call, the replica may not have it yet: the primary has.
  if (!row && reads !== db) return byId(db, partitions ? Date.now() - RECENT_CALL_MS : undefined);
  return row;
}

/** A page of calls without free text: window by window, newest first, until the page is full. */
async function listByWindows(
  { reads, windowsOf }: ScanSource,
  query: CallQuery,
  page: { limit: number; after?: CallCursor | undefined },
): Promise<CallSummaryRow[]> {
  const rows: CallSummaryRow[] = [];
  for (const window of await windowsOf(query, page.after)) {
    let qb = applyFilters(reads.selectFrom('calls').select(CALL_SUMMARY_COLUMNS), window);
    if (page.after) qb = qb.where(olderThan(page.after));
    rows.push(
      ...(await qb
        .orderBy('at', 'desc')
        .orderBy('id', 'desc')
        .limit(page.limit - rows.length)
        .execute()),
    );
    if (rows.length >= page.limit) break;
  }
  return rows;
}

/** The search's batches as an export's row scan: each `next()` hands one batch's rows over. */
function rowScanOf(
  batches: AsyncGenerator<Record<string, unknown>[]>,
  handOver: (row: Record<string, unknown>) => void,
): RowScan {
  return {
    async next() {
      const { value: rows, done } = await batches.next();
      if (done) return false;
      for (const row of rows) handOver(row);
      return true;
    },
    close() {
      void batches.return(undefined);
    },
  };
}
