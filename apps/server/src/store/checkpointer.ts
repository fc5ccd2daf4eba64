import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/**
 * SQLite's WAL checkpoints, off the event loop.
 *
 * Left to itself, SQLite checkpoints inside the COMMIT that takes the write-ahead log past 1 000
 * pages: on the thread that committed, ours, which also answers requests. That copies those pages
 * into the database file and syncs both files, several milliseconds during which no request is
 * served, about once a second at full load (docs/performance.md#why-the-code-is-shaped-this-way).
 *
 * Here the main connection never checkpoints (`wal_autocheckpoint = 0`). A worker thread with a
 * connection of its own (checkpoint-worker.mjs) runs a PASSIVE checkpoint every `intervalMs`,
 * which copies what the log holds without ever blocking the writer. The log restarts from its
 * beginning only when a checkpoint has copied all of it and the writer then begins a transaction;
 * under a steady load a frame is always being added, so once the log holds `resetFrames` the worker
 * asks for a pause: the main thread stops writing (it holds Kysely's connection, which every write
 * on it takes), the worker copies the little that came in since its last pass, and the writes go
 * on. Calls recorded meanwhile wait in their batch; the event loop stays free.
 *
 * Durability is SQLite's own: a checkpoint syncs the log before copying and the database after,
 * and a crash at any point leaves the log to be replayed. Should the worker fail, the main
 * connection checkpoints as SQLite does by default again.
 *
 * Protocol (worker → main): `pause` (stop writing and answer `paused`), `resume` (the pass is
 * done: {log, checkpointed} or {error}), `error` ({message}: a pass failed; it tries again).
 * Main → worker: `paused`, `close`.
 */
export interface CheckpointerOptions {
  /** The main connection, whose own checkpoints are turned off while the worker runs. */
  readonly sqlite: SQLite.Database;
  readonly synchronous: 'FULL' | 'NORMAL';
  /** Runs `work` while nothing else writes on the main connection. */
  readonly pauseWrites: (work: () => Promise<void>) => Promise<void>;
  /** How often the worker checkpoints (default 250 ms). */
  readonly intervalMs?: number;
  /** Frames in the log at which the writer is paused so that the log can restart (default 4 000). */
  readonly resetFrames?: number;
  readonly onWarning?: (message: string, err?: unknown) => void;
}

export interface CheckpointerStats {
  /** Whether the worker runs (false: SQLite's own checkpoints are back on). */
  readonly running: boolean;
  /** Pauses of the writer so far. */
  readonly pauses: number;
}

export interface Checkpointer {
  stats(): CheckpointerStats;
  /** Stops the worker (a pass under way finishes first); SQLite's own checkpoints are back on. */
  close(): Promise<void>;
}

const WORKER_URL = new URL('./checkpoint-worker.mjs', import.meta.url);
/** SQLite's default `wal_autocheckpoint`, restored when the worker stops. */
const SQLITE_DEFAULT_FRAMES = 1000;
/** A pause the worker does not end within this long is ended anyway. */
const PAUSE_LIMIT_MS = 2000;

type WorkerMessage =
  | { type: 'pause' }
  | { type: 'resume'; log?: number; checkpointed?: number; error?: string; code?: string }
  | { type: 'error'; message: string; code?: string };

/** A checkpoint that keeps failing (a full disk) is reported at most this often. */
const FAILURE_WARN_EVERY_MS = 60_000;

export function startCheckpointer(options: CheckpointerOptions): Checkpointer {
  const { sqlite } = options;
  const warn = options.onWarning ?? (() => {});
  let running = true;
  let closing = false;
  let pauses = 0;
  /** Ends the pause under way, when there is one. */
  let endPause: (() => void) | undefined;

  sqlite.pragma('wal_autocheckpoint = 0');
  const worker = new Worker(WORKER_URL, {
    workerData: {
      file: sqlite.name,
      synchronous: options.synchronous,
      intervalMs: options.intervalMs ?? 250,
      resetFrames: options.resetFrames ?? 4000,
    },
    name: 'checkpoint',
  });
  // It never keeps the process alive on its own.
  worker.unref();

  /** SQLite checkpoints on commit again, as it does by default. */
  function fallBack(): void {
    if (!running) return;
    running = false;
    endPause?.();
    if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_FRAMES}`);
  }

  function pause(): void {
    void options
      .pauseWrites(async () => {
        if (!running || closing) return;
        await new Promise<void>((resolve) => {
          const limit = setTimeout(resolve, PAUSE_LIMIT_MS);
          endPause = () => {
            clearTimeout(limit);
            endPause = undefined;
            resolve();
          };
          worker.postMessage({ type: 'paused' });
        });
        pauses++;
      })
      .catch((err) => warn('The WAL checkpoint could not pause the writer.', err));
  }

  let lastFailureWarning = 0;
  /** A pass failed (it is tried again at the next tick): said once a minute, with SQLite's code. */
  function failed(message: string, code: string | undefined): void {
    const now = Date.now();
    if (now - lastFailureWarning < FAILURE_WARN_EVERY_MS) return;
    lastFailureWarning = now;
    warn(`A WAL checkpoint failed: ${message}`, Object.assign(new Error(message), { code }));
  }

  worker.on('message', (message: WorkerMessage) => {
    if (message.type === 'pause') pause();
    else if (message.type === 'resume') {
      endPause?.();
      if (message.error) failed(message.error, message.code);
    } else if (message.type === 'error') failed(message.message, message.code);
  });
  worker.on('error', (err) => {
    warn('The WAL checkpoint worker failed; SQLite checkpoints on commit again.', err);
    fallBack();
  });
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      // After an `error` event, that one warning said it.
      if (!closing && running) warn('The WAL checkpoint worker stopped; SQLite checkpoints on commit again.');
      fallBack();
      resolve();
    }),
  );

  return {
    stats: () => ({ running, pauses }),
    async close() {
      if (closing) return exited;
      closing = true;
      endPause?.();
      worker.postMessage({ type: 'close' });
      await exited;
    },
  };
}
