import { Worker } from 'node:worker_threads';
import { CALL_ROW_SQL, responseMatchSql } from '../store/index.js';
import { type CallQuery, likePattern, sqliteFilter, TEXT_COLUMNS } from './call-filters.js';

/**
 * The main thread's side of the free-text search worker (search-worker.mjs).
 *
 * Protocol (structured-clone messages; `id` names a job):
 *   → { type: 'search', id, query, after, want, select, budgetMs }   query: a WorkerQuery;
 *                                                          select: the rows' select list (SQL)
 *   ← { type: 'page', id, rows, stopped, scanned, last }   once
 *   → { type: 'scan', id, query, batchSize, select }       starts an export; its first batch follows
 *   ← { type: 'batch', id, rows, done }                     one per request
 *   → { type: 'next', id }                                  asks for the following batch
 *   → { type: 'cancel', id }                                drops a job
 *   ← { type: 'error', id, message }                        the job failed and is gone
 *   → { type: 'close' }                                     closes the connection; the thread ends
 */

/**
 * A CallQuery with its free text set. `pattern`, when given, is the LIKE pattern matched instead of
 * the text's substring (likePattern): the privacy erasure's digits of a number in order, whatever
 * stands between them (history/erasure.ts). `q` then only names the search.
 */
export type TextQuery = CallQuery & { readonly q: string; readonly pattern?: string | undefined };

/**
 * A TextQuery compiled for the worker, which cannot import call-filters.ts: conditions over
 * `calls` with their named parameters, the LIKE pattern, and `hit`: whether a call `c` holds it in
 * one of its texts (TEXT_COLUMNS; a response recorded by reference, its canonical answer:
 * store/call-answers.ts).
 */
interface WorkerQuery {
  readonly where: string[];
  readonly params: Record<string, string | number>;
  readonly pattern: string;
  readonly hit: string;
}

const like = (expression: string) => `${expression} LIKE @pattern ESCAPE '\\'`;
const HIT = TEXT_COLUMNS.map((column) =>
  column === 'response' ? responseMatchSql('c', like) : like(`c.${column}`),
).join(' OR ');

const workerQuery = (query: TextQuery): WorkerQuery => ({
  ...sqliteFilter(query),
  pattern: query.pattern ?? likePattern(query.q),
  hit: HIT,
});

/** The worker's select list for `columns`: '*' is a whole call as History reads it (CallRow). */
const selectList = (columns: readonly string[] | '*'): string =>
  columns === '*' ? CALL_ROW_SQL : columns.map((c) => `"${c.replace(/"/g, '""')}"`).join(', ');

export interface Key {
  readonly at: number;
  readonly id: number;
}

export interface WorkerPage<R> {
  readonly rows: R[];
  /** The time budget ran out before `want` matches were found or the history ended. */
  readonly stopped: boolean;
  /** Calls examined. */
  readonly scanned: number;
  /** The last (oldest) call examined; null when none was. */
  readonly last: Key | null;
}

/** Every slot of the worker is taken: answer 503 and let the client come back. */
export class SearchBusyError extends Error {
  override name = 'SearchBusyError';
}

/** The store closed while a search was under way. */
export class SearchClosedError extends Error {
  override name = 'SearchClosedError';
}

type Reply =
  | { type: 'page'; id: number; rows: unknown[]; stopped: boolean; scanned: number; last: Key | null }
  | { type: 'batch'; id: number; rows: unknown[]; done: boolean }
  | { type: 'error'; id: number; message: string };

interface Waiter {
  resolve(reply: Reply): void;
  reject(err: Error): void;
}

export interface SearchWorkerOptions {
  /** The SQLite database file the worker opens read-only. */
  readonly file: string;
  /** Searches and exports in the worker at once; one more is refused with SearchBusyError. */
  readonly maxJobs?: number;
  /** The worker thread's nice value on Linux (0 leaves it at the process's); default 10. */
  readonly nice?: number;
}

export interface SearchWorker {
  /** Up to `want` matches after `after`, newest first; stops early once `budgetMs` has passed. */
  page<R>(request: {
    query: TextQuery;
    after?: Key | undefined;
    want: number;
    columns: readonly string[] | '*';
    budgetMs?: number | undefined;
  }): Promise<WorkerPage<R>>;
  /**
   * Every match in batches, pulled one at a time. Takes its slot at once: throws SearchBusyError
   * here, not on the first `next()`, so that an export can still answer 503.
   */
  scan<R>(query: TextQuery, batchSize: number, columns: readonly string[] | '*'): AsyncGenerator<R[]>;
  /** Jobs under way (searches and open exports). */
  readonly jobs: number;
  /** Whether the worker thread is running. */
  readonly running: boolean;
  /** Ends every job (SearchClosedError) and the thread. */
  close(): Promise<void>;
}

const WORKER_URL = new URL('./search-worker.mjs', import.meta.url);
const DEFAULT_MAX_JOBS = 8;
/** The worker thread's nice value (Linux): the endpoints' thread wins the CPU when both want it. */
const DEFAULT_NICE = 10;

/** One worker thread, started on first use and again after a crash; at most `maxJobs` jobs. */
export function createSearchWorker(options: SearchWorkerOptions): SearchWorker {
  let closed = false;
  let nextId = 1;
  const thread = searchThread(options, () => closed);
  // Keep the process alive while work is under way, not while the worker idles.
  const slots = jobSlots(options.maxJobs ?? DEFAULT_MAX_JOBS, () => closed, {
    onFirst: () => thread.ref(),
    onLast: () => thread.unref(),
  });
  const send = (message: Message) => thread.send(message, slots.jobs > 0);

  return {
    get jobs() {
      return slots.jobs;
    },
    get running() {
      return thread.running;
    },
    async page<R>(request: Parameters<SearchWorker['page']>[0]): Promise<WorkerPage<R>> {
      const release = slots.acquire();
      try {
        const reply = check(
          await send({
            type: 'search',
            id: nextId++,
            query: workerQuery(request.query),
            after: request.after ?? null,
            want: request.want,
            select: selectList(request.columns),
            budgetMs: request.budgetMs ?? null,
          }),
        );
        if (reply.type !== 'page') throw new Error(`Search worker answered ${reply.type} to a search.`);
        return { rows: reply.rows as R[], stopped: reply.stopped, scanned: reply.scanned, last: reply.last };
      } finally {
        release();
      }
    },
    scan<R>(query: TextQuery, batchSize: number, columns: readonly string[] | '*'): AsyncGenerator<R[]> {
      const release = slots.acquire();
      const id = nextId++;
      return exportBatches<R>(
        id,
        () => ({ type: 'scan', id, query: workerQuery(query), batchSize, select: selectList(columns) }),
        send,
        (message) => thread.post(message),
        release,
      );
    },
    async close() {
      if (closed) return;
      closed = true;
      await thread.close();
    },
  };
}

/** A message to the worker, with the job it is about. */
type Message = { type: string; id: number } & Record<string, unknown>;

const check = (reply: Reply): Reply => {
  if (reply.type === 'error') throw new Error(`Search failed: ${reply.message}`);
  return reply;
};

/**
 * At most `maxJobs` jobs at once. `acquire` takes a slot or throws (SearchClosedError once closed,
 * SearchBusyError when every slot is taken); the function it answers gives the slot back, once.
 * `onFirst` and `onLast` are told when the first job begins and the last one ends.
 */
export function jobSlots(
  maxJobs: number,
  isClosed: () => boolean,
  on: { onFirst?: () => void; onLast?: () => void } = {},
) {
  let jobs = 0;
  return {
    get jobs() {
      return jobs;
    },
    acquire(): () => void {
      if (isClosed()) throw new SearchClosedError('The store is closed.');
      if (jobs >= maxJobs) throw new SearchBusyError(`${maxJobs} searches are already under way.`);
      jobs++;
      if (jobs === 1) on.onFirst?.();
      let released = false;
      return () => {
        if (released) return;
        released = true;
        jobs--;
        if (jobs === 0) on.onLast?.();
      };
    },
  };
}

/**
 * The worker thread: started on first use and again after a crash, each message's reply handed to
 * whoever sent it (by its `id`); a thread that ends or fails fails every job waiting on it.
 */
function searchThread(options: SearchWorkerOptions, isClosed: () => boolean) {
  let worker: Worker | undefined;
  let exited: Promise<void> | undefined;
  /** The reply each job is waiting for. */
  const waiters = new Map<number, Waiter>();

  function failAll(err: Error): void {
    const pending = [...waiters.values()];
    waiters.clear();
    for (const w of pending) w.reject(err);
  }

  function thread(): Worker {
    if (isClosed()) throw new SearchClosedError('The store is closed.');
    if (worker) return worker;
    const w = new Worker(WORKER_URL, {
      workerData: { file: options.file, nice: options.nice ?? DEFAULT_NICE },
      name: 'search',
    });
    w.unref();
    w.on('message', (reply: Reply) => {
      const waiter = waiters.get(reply.id);
      if (!waiter) return;
      waiters.delete(reply.id);
      waiter.resolve(reply);
    });
    w.on('error', (err) => {
      if (worker === w) worker = undefined;
      failAll(err);
    });
    exited = new Promise((resolve) =>
      w.once('exit', () => {
        if (worker === w) worker = undefined;
        failAll(
          isClosed()
            ? new SearchClosedError('The store is closed.')
            : new Error('The search worker stopped.'),
        );
        resolve();
      }),
    );
    worker = w;
    return w;
  }

  return {
    get running() {
      return worker !== undefined;
    },
    ref: () => worker?.ref(),
    unref: () => worker?.unref(),
    /**
     * Sends `message`, starting the thread if need be, and answers its reply; while `busy` (jobs
     * under way), the thread keeps the process alive.
     */
    send(message: Message, busy: boolean): Promise<Reply> {
      const w = thread();
      if (busy) w.ref();
      return new Promise<Reply>((resolve, reject) => {
        waiters.set(message.id, { resolve, reject });
        w.postMessage(message);
      });
    },
    /** Posts `message` to a running thread, with no reply to wait for. */
    post(message: Message): void {
      worker?.postMessage(message);
    },
    /** Asks the thread to close, and waits until it has. */
    async close(): Promise<void> {
      const w = worker;
      if (!w) return;
      w.postMessage({ type: 'close' });
      // The worker ends within one chunk; a wedged one is terminated.
      const timer = setTimeout(() => void w.terminate(), 2000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Job `id`'s batches, an export's, pulled one at a time: `start` asks for the first (made as it is
 * first pulled), `next` for each after it.
 * Its slot is given back (`release`) once the last batch came, on an error, or when the export is
 * dropped, which cancels the job in the worker.
 */
function exportBatches<R>(
  id: number,
  start: () => Message,
  send: (message: Message) => Promise<Reply>,
  post: (message: Message) => void,
  release: () => void,
): AsyncGenerator<R[]> {
  let state: 'new' | 'open' | 'done' = 'new';
  const finish = (): void => {
    if (state === 'open') post({ type: 'cancel', id });
    state = 'done';
    release();
  };
  const generator: AsyncGenerator<R[]> = {
    async next() {
      if (state === 'done') return { value: undefined, done: true };
      try {
        const message = state === 'new' ? start() : { type: 'next', id };
        state = 'open';
        const reply = check(await send(message));
        if (reply.type !== 'batch') throw new Error(`Search worker answered ${reply.type} to an export.`);
        if (reply.done) {
          state = 'done';
          release();
          // The last batch may be empty.
          if (reply.rows.length === 0) return { value: undefined, done: true };
        }
        return { value: reply.rows as R[], done: false };
      } catch (err) {
        if (state === 'open') state = 'done';
        release();
        throw err;
      }
    },
    async return() {
      finish();
      return { value: undefined, done: true };
    },
    async throw(err: unknown) {
      finish();
      throw err;
    },
    [Symbol.asyncIterator]() {
      return generator;
    },
  };
  return generator;
}
