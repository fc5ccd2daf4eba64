import type { CompiledQuery, Kysely, SelectQueryBuilder } from 'kysely';
import pg from 'pg';
import type { CallSummaryRow, Database, Store } from '../store/index.js';
import { applyFilters, type CallCursor, type CallQuery, olderThan } from './call-filters.js';

/**
 * History's scans of the calls (exports, and whatever reads every matching call): newest first,
 * window after window, in batches read one at a time, so that memory stays constant; `scanRowsBy`
 * hands each row over as the database gives it, never gathered into a result.
 */

/** A scan handing rows over batch by batch (History's `scanRows`). */
export interface RowScan {
  /**
   * Reads the next batch, each of its rows handed over; false when there was none left.
   * `batchSize` sets this batch's size (the scan's own when not given; free text keeps its own).
   */
  next(batchSize?: number): Promise<boolean>;
  /** Stops the scan (a batch under way finishes, its rows still handed over). */
  close(): void;
}

/**
 * A pg query whose rows go to its `row` listeners only. pg keeps every row in its result as well
 * whenever the query has a callback (and with the pool's `query_timeout` it always has one, its
 * timer's): kept so, an export's rows outlived young GCs and reached the old generation, driving
 * the RSS up (docs/performance.md#exports-of-all-calls).
 */
class RowByRow extends pg.Query {
  handleRowDescription(message: unknown): void {
    (pg.Query.prototype as unknown as { handleRowDescription(m: unknown): void }).handleRowDescription.call(
      this,
      message,
    );
    (this as unknown as { _accumulateRows: boolean })._accumulateRows = false;
  }
}

/** Where a scan reads: the store, and the query's time windows (calls.ts `windowsOf`). */
export interface ScanSource {
  readonly store: Store;
  readonly reads: Kysely<Database>;
  windowsOf(query: CallQuery, after?: CallCursor): Promise<CallQuery[]>;
}

/** Every call `query` matches, newest first, in batches of `batchSize` with the columns `columns` selects. */
export async function* scanBy<R extends CallSummaryRow>(
  { reads, windowsOf }: ScanSource,
  query: CallQuery,
  batchSize: number,
  columns: (qb: SelectQueryBuilder<Database, 'calls', object>) => SelectQueryBuilder<Database, 'calls', R>,
): AsyncGenerator<R[]> {
  let cursor: CallCursor | undefined;
  for (const window of await windowsOf(query)) {
    for (;;) {
      let qb = applyFilters(columns(reads.selectFrom('calls')), window);
      if (cursor) qb = qb.where(olderThan(cursor));
      const rows = await qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(batchSize).execute();
      if (rows.length > 0) yield rows;
      const last = rows[rows.length - 1];
      if (last) cursor = { at: last.at, id: last.id };
      if (rows.length < batchSize) break;
    }
  }
}

/**
 * One batch's query run so that each row goes to `each` as it is read: SQLite's statement
 * iterated, PostgreSQL's rows taken off the connection one at a time (pg's row events; Kysely
 * would gather them into one result first).
 */
async function eachRow(
  store: Store,
  compiled: CompiledQuery,
  each: (row: Record<string, unknown>) => void,
): Promise<void> {
  if (store.sqlite) {
    for (const row of store.sqlite.prepare(compiled.sql).iterate(...compiled.parameters))
      each(row as Record<string, unknown>);
    return;
  }
  if (!store.readPool) throw new Error('The store has neither SQLite nor a PostgreSQL pool.');
  const client = await store.readPool.connect();
  try {
    await new Promise<void>((resolve, reject) => {
      let failed: unknown;
      let settled = false;
      // Settled by a callback, not the `error` and `end` events: pg's query_timeout wraps the
      // query's callback, and when it fires (or the query fails) it calls that callback alone.
      // Rows still arriving after a timeout are dropped.
      const query = new RowByRow(compiled.sql, [...compiled.parameters], (err: Error | null | undefined) => {
        settled = true;
        if (err) reject(err);
        else if (failed !== undefined) reject(failed);
        else resolve();
      });
      query.on('row', (row: Record<string, unknown>) => {
        if (settled || failed !== undefined) return;
        try {
          each(row);
        } catch (err) {
          failed = err;
        }
      });
      (client as unknown as pg.ClientBase).query(query);
    });
  } finally {
    client.release();
  }
}

/** `query`'s calls handed to `each` row by row, a batch at each `next()` (History's `scanRows`). */
export function scanRowsBy(
  source: ScanSource,
  query: CallQuery,
  batchSize: number,
  columns: (
    qb: SelectQueryBuilder<Database, 'calls', object>,
  ) => SelectQueryBuilder<Database, 'calls', object>,
  each: (row: Record<string, unknown>) => void,
): RowScan {
  let cursor: CallCursor | undefined;
  let ended = false;
  let windows: CallQuery[] | undefined;
  return {
    async next(size = batchSize) {
      windows ??= await source.windowsOf(query);
      // A window read to its end goes on in the next, in the same call: `false` means the end.
      while (!ended) {
        const window = windows[0];
        if (!window) break;
        let qb = applyFilters(columns(source.reads.selectFrom('calls')), window);
        if (cursor) qb = qb.where(olderThan(cursor));
        const compiled = qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(size).compile();
        let count = 0;
        let at = 0;
        let id = 0;
        await eachRow(source.store, compiled, (row) => {
          count++;
          at = row.at as number;
          id = row.id as number;
          each(row);
        });
        if (count > 0) cursor = { at, id };
        if (count < size) windows.shift();
        if (count > 0) return true;
      }
      ended = true;
      return false;
    },
    close() {
      ended = true;
    },
  };
}
