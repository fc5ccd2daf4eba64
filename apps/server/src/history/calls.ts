import { EventEmitter } from 'node:events';
import type SQLite from 'better-sqlite3';
import { type Insertable, type Kysely, type Selectable, type SelectQueryBuilder, sql } from 'kysely';
import type { IntakeBatch, OutboxIntake } from '../outbox/intake.js';
import type { NewDelivery } from '../outbox/payload.js';
import { applyFilters, type CallCursor, type CallQuery, olderThan } from './call-filters.js';
import { bucketCounts, type StatsRow } from './call-stats.js';
import type { OpenedDatabase } from './db.js';
import { onSqliteConnection } from './dialect.js';
import { createPgSearch } from './pg-search.js';
import { CALLS_CHANNEL, type CallsNotice, IDS_PER_NOTICE } from './pg-watch.js';
import type { CallsTable, Database } from './schema.js';
import { createSearchWorker, type SearchWorker, type TextQuery } from './search.js';
import { createWalSync, type WalSync } from './wal-sync.js';

export type { CallCursor, CallQuery };

export type NewCall = Insertable<CallsTable>;
export type CallRow = Selectable<CallsTable>;
/** A call without its raw request and response: what lists and the live tail carry. */
export type CallSummaryRow = Omit<CallRow, 'request' | 'response'>;

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

export type { StatsRow };

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
  /**
   * Emits `recorded` with the calls of each commit, once committed (for the live tail): this
   * instance's at once, and on PostgreSQL other instances' as their notifications arrive (read
   * back only while someone listens).
   */
  readonly events: EventEmitter<{ recorded: [CallRow[]] }>;
  /** Calls committed by another instance (PostgreSQL): read and emitted if anyone listens. */
  committedElsewhere(ids: readonly number[]): void;
  /** Waits until every record handed in so far is committed. */
  flush(): Promise<void>;
  /** The free-text search: a worker thread on SQLite (started on first use), the pool on PostgreSQL. */
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
  'request_id',
] as const satisfies readonly (keyof NewCall)[];

/** Columns a new call may leave out (better-sqlite3 wants every named parameter bound). */
const NULLABLE_DEFAULTS = {
  operation: null,
  user_agent: null,
  params: null,
  error: null,
  note: null,
  request_id: null,
};

type SummaryColumn = Exclude<(typeof COLUMNS)[number], 'request' | 'response'>;
/** Everything but the raw messages, which lists and the live tail do not carry. */
const SUMMARY_COLUMNS: readonly ('id' | SummaryColumn)[] = [
  'id',
  ...COLUMNS.filter((c): c is SummaryColumn => c !== 'request' && c !== 'response'),
];

/** Free text given (an empty `q` filters nothing): the search goes to the worker. */
const hasText = (query: CallQuery): query is TextQuery => query.q !== undefined && query.q !== '';

interface Pending {
  readonly call: NewCall;
  readonly deliveries: readonly NewDelivery[] | undefined;
  readonly resolve: (id: number) => void;
  readonly reject: (err: unknown) => void;
}

/** Rows per INSERT on PostgreSQL: 17 columns × 500 stays far below its 65 535 parameters. */
const INSERT_CHUNK = 500;

/**
 * Commits a batch of calls with their deliveries in one transaction and answers their ids, in
 * order. The dialect's piece of the call repository (the hot write of every request).
 */
type BatchWriter = (batch: readonly Pending[]) => Promise<Written>;

interface Written {
  /** The calls' ids, in the batch's order. */
  readonly ids: number[];
  /** Deliveries queued `pending` that the outbox was not told of yet (PostgreSQL's). */
  readonly queued: number;
}

/**
 * SQLite: the insert is prepared once and run on better-sqlite3 directly, the whole batch one
 * synchronous transaction, while holding Kysely's connection (so it never lands in a transaction
 * Kysely has open). The outbox's step (outbox/intake.ts) inserts each call's deliveries in the same
 * transaction, claiming those it has room for, and is told once the commit is durable.
 */
function sqliteWriter(
  db: Kysely<Database>,
  sqlite: SQLite.Database,
  intake: OutboxIntake,
  wal: WalSync | undefined,
  instance: string,
): BatchWriter {
  // With a WalSync the commit itself does not wait for the disk (NORMAL); the batch is answered
  // once the WAL is flushed, off the event loop (see wal-sync.ts).
  const relax = wal ? sqlite.prepare('PRAGMA synchronous = NORMAL') : undefined;
  const restore = wal ? sqlite.prepare('PRAGMA synchronous = FULL') : undefined;
  const insert = sqlite.prepare(
    `INSERT INTO calls (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})`,
  );
  const outbox = intake.sqlite(sqlite);
  const insertAll = sqlite.transaction((batch: readonly Pending[], step: IntakeBatch, now: number) =>
    batch.map(({ call, deliveries: items }) => {
      const id = Number(insert.run({ ...NULLABLE_DEFAULTS, ...call }).lastInsertRowid);
      if (items && items.length > 0) outbox.insert(step, id, items, now, instance);
      return id;
    }),
  );
  return async (batch) => {
    const step = outbox.begin();
    let ids: number[];
    try {
      ids = await onSqliteConnection(db, () => {
        relax?.run();
        try {
          return insertAll(batch, step, Date.now());
        } finally {
          restore?.run();
        }
      });
      await wal?.durable();
    } catch (err) {
      outbox.failed(step);
      throw err;
    }
    outbox.committed(step);
    return { ids, queued: 0 };
  };
}

/**
 * PostgreSQL: the batch's ids are drawn from the sequence first, then the calls and their
 * deliveries (the outbox's rows: outbox/intake.ts) go in multi-row INSERTs, and the commit
 * announces the ids to the other instances (NOTIFY is delivered on commit, and only then).
 */
function postgresWriter(db: Kysely<Database>, instance: string, intake: OutboxIntake): BatchWriter {
  return (batch) =>
    db.transaction().execute(async (trx) => {
      const drawn = await sql<{ id: number }>`SELECT nextval(pg_get_serial_sequence('calls', 'id')) AS id
        FROM generate_series(1, ${batch.length})`.execute(trx);
      const ids = drawn.rows.map((r) => Number(r.id)).sort((a, b) => a - b);
      const now = Date.now();
      const calls = batch.map(({ call }, i) => ({ ...NULLABLE_DEFAULTS, ...call, id: ids[i] as number }));
      for (let i = 0; i < calls.length; i += INSERT_CHUNK)
        await trx
          .insertInto('calls')
          .values(calls.slice(i, i + INSERT_CHUNK))
          .execute();
      const deliveries = batch.flatMap(({ deliveries: items }, i) =>
        items && items.length > 0 ? intake.rows(ids[i] as number, items, now) : [],
      );
      for (let i = 0; i < deliveries.length; i += INSERT_CHUNK)
        await trx
          .insertInto('deliveries')
          .values(deliveries.slice(i, i + INSERT_CHUNK))
          .execute();
      for (let i = 0; i < ids.length; i += IDS_PER_NOTICE) {
        const notice: CallsNotice = {
          from: instance,
          ids: ids.slice(i, i + IDS_PER_NOTICE),
          ...(deliveries.length > 0 ? { queued: true } : {}),
        };
        await sql`SELECT pg_notify(${CALLS_CHANNEL}, ${JSON.stringify(notice)})`.execute(trx);
      }
      return { ids, queued: deliveries.length };
    });
}

/**
 * The call repository. Records are group-committed: those arriving in the same turn of the event
 * loop share one transaction. Reads are Kysely queries, the same on both databases; free text
 * goes to the search worker (SQLite) or the chunked PostgreSQL search.
 */
export function createCallRepository(
  opened: OpenedDatabase,
  options: {
    searchMaxJobs?: number;
    instance: string;
    /** The outbox's step in each commit: a call's deliveries go in with it. */
    intake: OutboxIntake;
    /** A commit failed: what it says of the database (a full disk, a lost connection). */
    onFailure?: (err: unknown) => void;
  },
): CallRepository {
  const { db } = opened;
  let queue: Pending[] = [];
  // Free text (a LIKE over raw messages, up to gigabytes): on SQLite in a worker thread on its own
  // read-only connection to the same WAL file; on PostgreSQL in the database's own processes.
  const searchWorker =
    opened.dialect === 'sqlite'
      ? createSearchWorker({ file: opened.sqlite.name, maxJobs: options.searchMaxJobs })
      : createPgSearch(db, { maxJobs: options.searchMaxJobs });
  const wal =
    opened.dialect === 'sqlite' && opened.synchronous === 'FULL'
      ? createWalSync(`${opened.sqlite.name}-wal`)
      : undefined;
  const write =
    opened.dialect === 'sqlite'
      ? sqliteWriter(db, opened.sqlite, options.intake, wal, options.instance)
      : postgresWriter(db, options.instance, options.intake);
  /** Batches being committed: flush and close wait for them. */
  const committing = new Set<Promise<void>>();

  const events = new EventEmitter<{ recorded: [CallRow[]] }>();
  // One listener per live-tail client.
  events.setMaxListeners(0);

  async function commit(batch: Pending[]): Promise<void> {
    let ids: number[];
    let queued: number;
    try {
      ({ ids, queued } = await write(batch));
    } catch (err) {
      options.onFailure?.(err);
      for (const p of batch) p.reject(err);
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(ids[i] as number);
    if (queued > 0) options.intake.queued();
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
      if (cursor) qb = qb.where(olderThan(cursor));
      const rows = await qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(batchSize).execute();
      if (rows.length === 0) return;
      yield rows;
      const last = rows[rows.length - 1] as R;
      cursor = { at: last.at, id: last.id };
      if (rows.length < batchSize) return;
    }
  }

  /** Deletes one batch of the oldest calls before `before`, with their deliveries and attempts. */
  const deleteBatch = (before: number, batch: number): Promise<number> =>
    db.transaction().execute(async (trx) => {
      const ids = (
        await trx
          .selectFrom('calls')
          .select('id')
          .where('at', '<', before)
          .orderBy('at')
          .limit(batch)
          .execute()
      ).map((r) => r.id);
      if (ids.length === 0) return 0;
      await trx
        .deleteFrom('delivery_attempts')
        .where('delivery_id', 'in', trx.selectFrom('deliveries').select('id').where('call_id', 'in', ids))
        .execute();
      await trx.deleteFrom('deliveries').where('call_id', 'in', ids).execute();
      await trx.deleteFrom('calls').where('id', 'in', ids).execute();
      return ids.length;
    });

  let timer: NodeJS.Immediate | undefined;
  /**
   * SQLite: one batch at a time, from its commit to its answers. What arrives meanwhile joins the
   * next batch, so batches grow with the load: a commit writes every page it touched whatever the
   * rows on it, so SQLite's work per call falls as a batch grows (bench/commit-batch.mjs: 78 µs per
   * call with its delivery and attempt in batches of 10, 41 µs in batches of 100). It adds little
   * wait: with SQLITE_SYNCHRONOUS=FULL a batch committed meanwhile would wait for the flush under
   * way, then for its own, all the same. PostgreSQL's batches overlap, each on a pooled connection.
   */
  const serial = opened.dialect === 'sqlite';
  let writing = false;
  function commitQueued(): void {
    timer = undefined;
    if (queue.length === 0 || (serial && writing)) return;
    const batch = queue;
    queue = [];
    writing = true;
    const done = commit(batch).finally(() => {
      committing.delete(done);
      writing = false;
      if (queue.length > 0) timer ??= setImmediate(commitQueued);
    });
    committing.add(done);
  }

  return {
    record(call, items) {
      return new Promise<number>((resolve, reject) => {
        queue.push({ call, deliveries: items, resolve, reject });
        timer ??= setImmediate(commitQueued);
      });
    },
    async flush() {
      while (queue.length > 0 || committing.size > 0) {
        if (timer) clearImmediate(timer);
        commitQueued();
        await Promise.all(committing);
      }
    },
    events,
    committedElsewhere(ids) {
      if (ids.length === 0 || events.listenerCount('recorded') === 0) return;
      void db
        .selectFrom('calls')
        .selectAll()
        .where('id', 'in', [...ids])
        .orderBy('id')
        .execute()
        .then((rows) => {
          if (rows.length > 0) events.emit('recorded', rows);
        })
        .catch(() => {
          // The database went away meanwhile: the live tail misses these; History has them.
        });
    },
    findById(id) {
      return db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async search(query, page) {
      if (hasText(query)) {
        const found = await searchWorker.page<CallSummaryRow>({
          query: query,
          after: page.after,
          want: page.limit,
          columns: SUMMARY_COLUMNS,
        });
        return found.rows;
      }
      let qb = applyFilters(db.selectFrom('calls').select(SUMMARY_COLUMNS), query);
      if (page.after) qb = qb.where(olderThan(page.after));
      return qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(page.limit).execute();
    },
    async searchText(query, page) {
      // One more than the page: finding it tells that the page is full and more follow.
      const found = await searchWorker.page<CallSummaryRow>({
        query: query,
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
      if (hasText(query)) return searchWorker.scan<CallRow>(query, batchSize, '*');
      return scanBy(query, batchSize, (qb) => qb.selectAll());
    },
    scanSummaries(query, batchSize = 500) {
      if (hasText(query)) return searchWorker.scan<CallSummaryRow>(query, batchSize, SUMMARY_COLUMNS);
      return scanBy(query, batchSize, (qb) => qb.select(SUMMARY_COLUMNS));
    },
    searchWorker,
    async close() {
      await wal?.close();
      return searchWorker.close();
    },
    stats(range) {
      return bucketCounts(db, range);
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
        const n = await deleteBatch(before, batch);
        total += n;
        if (n < batch) return total;
        // Let requests in between batches (SQLite has one connection).
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
