import { type Kysely, sql } from 'kysely';
import { type Database, selectCallRow } from '../store/index.js';
import { applyFilters, type CallQuery, likePattern, olderThan, TEXT_COLUMNS } from './call-filters.js';
import {
  jobSlots,
  type Key,
  SearchClosedError,
  type SearchWorker,
  type TextQuery,
  type WorkerPage,
} from './search.js';

const MIN_CHUNK = 64;
const MAX_CHUNK = 8192;
/** A chunk should take about this long: short enough to keep to budgets and to share the pool. */
const CHUNK_TARGET_MS = 50;
const DEFAULT_MAX_JOBS = 8;

/**
 * Whether one of a call's text columns contains the pattern (call-filters.ts's likePattern, in
 * lower case). Each column has its ASCII letters put in lower case and nothing else changed, as
 * SQLite's LIKE compares them: under the "C" collation PostgreSQL's lower() folds A–Z only, and
 * is much faster than translate() (docs/performance.md#what-was-tried).
 */
const textHit = (pattern: string) => {
  const like = (column: string) => sql`lower(${sql.ref(column)} COLLATE "C") LIKE ${pattern}`;
  return sql<boolean>`(${sql.join(
    TEXT_COLUMNS.map((column) =>
      // A response recorded by reference: its canonical answer's text (store/call-answers.ts,
      // responseMatchSql), those that match found once per statement.
      column === 'response'
        ? sql`(${like('c.response')} OR c.response_ref IN (SELECT id FROM call_answers WHERE ${like('response')}))`
        : like(`c.${column}`),
    ),
    sql` OR `,
  )})`;
};

/**
 * Free-text search over calls on PostgreSQL, with the search worker's contract (search.ts): newest
 * first, a chunk of keys at a time under the indexed filters, the LIKE run on that chunk's rows
 * only, stopping at `want` matches or when the time budget has passed. PostgreSQL runs the scan in
 * its own processes, so no thread is needed here; a job holds one pooled connection per chunk.
 */
export function createPgSearch(
  db: Kysely<Database>,
  options: {
    maxJobs?: number;
    /** The query in time windows, newest first (time-windows.ts): each chunk is read within one. */
    windowsOf?: (query: TextQuery, after: Key | undefined) => Promise<CallQuery[]>;
  } = {},
): SearchWorker {
  const windowsOf = options.windowsOf ?? (async (query: TextQuery) => [query]);
  let closed = false;
  const slots = jobSlots(options.maxJobs ?? DEFAULT_MAX_JOBS, () => closed);
  const scanner = (query: TextQuery, after: Key | null) =>
    chunkScanner(db, windowsOf, () => closed, query, after);
  const rowsOf = <R>(keys: readonly Key[], columns: readonly string[] | '*') =>
    rowsOfKeys<R>(db, keys, columns);

  return {
    get jobs() {
      return slots.jobs;
    },
    get running() {
      return !closed;
    },
    async page<R>(request: Parameters<SearchWorker['page']>[0]): Promise<WorkerPage<R>> {
      const release = slots.acquire();
      try {
        const started = performance.now();
        const scan = scanner(request.query, request.after ?? null);
        const hits: Key[] = [];
        let scanned = 0;
        let last: Key | null = null;
        let stopped = false;
        outer: for (;;) {
          const keys = await scan.next();
          for (const key of keys) {
            scanned++;
            last = { at: key.at, id: key.id };
            if (key.hit) {
              hits.push({ at: key.at, id: key.id });
              if (hits.length >= request.want) break outer;
            }
          }
          if (scan.ended) break;
          if (request.budgetMs !== undefined && performance.now() - started >= request.budgetMs) {
            stopped = true;
            break;
          }
        }
        return { rows: await rowsOf<R>(hits, request.columns), stopped, scanned, last };
      } finally {
        release();
      }
    },
    scan<R>(query: TextQuery, batchSize: number, columns: readonly string[] | '*'): AsyncGenerator<R[]> {
      // The slot is taken here, so that a busy search is refused before anything is read.
      const release = slots.acquire();
      const scan = scanner(query, null);
      async function* batches(): AsyncGenerator<R[]> {
        try {
          let pending: Key[] = [];
          for (;;) {
            while (pending.length < batchSize && !scan.ended) {
              for (const key of await scan.next()) if (key.hit) pending.push({ at: key.at, id: key.id });
            }
            if (pending.length === 0) return;
            const batch = pending.slice(0, batchSize);
            pending = pending.slice(batchSize);
            const rows = await rowsOf<R>(batch, columns);
            if (rows.length > 0) yield rows;
          }
        } finally {
          release();
        }
      }
      const generator = batches();
      // Given back also when the export is dropped before its first batch was asked for.
      const end = generator.return.bind(generator);
      generator.return = (value) => {
        release();
        return end(value);
      };
      return generator;
    },
    async close() {
      closed = true;
    },
  };
}

/**
 * The keys of a text query's calls, a chunk at a time, newest first after `after`, each with
 * whether it holds the text (`hit`): the chunk read under the indexed filters within one time
 * window, the LIKE run on its rows only. A chunk's size follows how long the last one took.
 */
function chunkScanner(
  db: Kysely<Database>,
  windowsOf: (query: TextQuery, after: Key | undefined) => Promise<CallQuery[]>,
  isClosed: () => boolean,
  query: TextQuery,
  after: Key | null,
) {
  const pattern = query.pattern ?? likePattern(query.q);
  let cursor = after;
  let size = MIN_CHUNK;
  let ended = false;
  let windows: CallQuery[] | undefined;
  return {
    get ended() {
      return ended;
    },
    /** The next chunk's keys; empty, without having ended, when a window ran out. */
    async next(): Promise<{ id: number; at: number; hit: boolean }[]> {
      if (isClosed()) throw new SearchClosedError('The store is closed.');
      if (ended) return [];
      windows ??= await windowsOf(query, cursor ?? undefined);
      const window = windows[0];
      if (!window) {
        ended = true;
        return [];
      }
      const started = performance.now();
      const from = cursor;
      const keys = await db
        .selectFrom((eb) => {
          let chunk = applyFilters(eb.selectFrom('calls').select(['id', 'at']), window);
          if (from) chunk = chunk.where(olderThan(from));
          return chunk.orderBy('at', 'desc').orderBy('id', 'desc').limit(size).as('chunk');
        })
        // By time too, within the window: each row is looked up in its own partition only, and
        // the query is planned over the window's.
        .innerJoin('calls as c', (join) => {
          let on = join.onRef('c.id', '=', 'chunk.id').onRef('c.at', '=', 'chunk.at');
          if (window.from !== undefined) on = on.on('c.at', '>=', window.from);
          if (window.to !== undefined) on = on.on('c.at', '<', window.to);
          return on;
        })
        .select(['chunk.id as id', 'chunk.at as at', textHit(pattern).as('hit')])
        .orderBy('chunk.at', 'desc')
        .orderBy('chunk.id', 'desc')
        .execute();
      if (keys.length < size) {
        windows.shift();
        if (windows.length === 0) ended = true;
      }
      const last = keys[keys.length - 1];
      if (last) cursor = { at: last.at, id: last.id };
      const took = performance.now() - started;
      if (took < CHUNK_TARGET_MS / 2) size = Math.min(MAX_CHUNK, size * 2);
      else if (took > CHUNK_TARGET_MS * 2) size = Math.max(MIN_CHUNK, Math.floor(size / 2));
      return keys;
    },
  };
}

/**
 * The rows of the matching keys, newest first (rows deleted since, by retention, are skipped),
 * looked up within the time they span: in those partitions only.
 */
async function rowsOfKeys<R>(
  db: Kysely<Database>,
  keys: readonly Key[],
  columns: readonly string[] | '*',
): Promise<R[]> {
  if (keys.length === 0) return [];
  const ids = keys.map((k) => k.id);
  const times = keys.map((k) => k.at);
  const base = db
    .selectFrom('calls')
    .where('id', 'in', ids)
    .where('at', '>=', Math.min(...times))
    .where('at', '<=', Math.max(...times));
  // '*': a whole call as History reads it (CallRow), its response resolved.
  const rows =
    columns === '*'
      ? await selectCallRow(base).execute()
      : await base.select(columns as readonly 'id'[]).execute();
  const order = new Map(ids.map((id, i) => [id, i]));
  return (rows as unknown as { id: number }[]).sort(
    (a, b) => (order.get(a.id) as number) - (order.get(b.id) as number),
  ) as R[];
}
