// The free-text search worker: runs in a worker thread (node:worker_threads) with its own read-only
// better-sqlite3 connection on the store's WAL database, so that a LIKE over gigabytes of raw
// messages never holds the main thread's event loop or its connection.
//
// Plain JavaScript on purpose: Node 20 cannot load TypeScript in a Worker, and this file must run
// the same from apps/server/src (under Vitest) and from apps/server/dist (build.mjs copies it next
// to server.js). Its only import is better-sqlite3. The protocol is described in search.ts.
//
// Jobs are run a chunk at a time, round-robin, with the event loop turned between chunks, so a
// long export does not starve a search and a `cancel` or `close` is seen within one chunk.
import fs from 'node:fs';
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

// On Linux the nice value is per thread: this thread yields the CPU to the main thread (the
// endpoints) whenever both want it, and takes what is left otherwise. Elsewhere, nothing changes.
if (workerData.nice) {
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) os.setPriority(tid, workerData.nice);
  } catch {
    // No /proc (not Linux) or not allowed: run at the process's priority.
  }
}

const MIN_CHUNK = 8;
const MAX_CHUNK = 4096;
/** A chunk should take about this long: short enough to interleave jobs and to keep to budgets. */
const CHUNK_TARGET_MS = 20;

const db = new SQLite(workerData.file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('cache_size = -8000');

/** Prepared statements by shape (which filters, whether after a cursor). */
const statements = new Map();

/**
 * The next `limit` calls newest first after `after` under the indexed filters, each with whether
 * one of its text columns contains the text. The chunk is read from the (…, at, id) index first,
 * so LIKE runs on those rows only, whatever plan the filters get. `query` comes compiled from the
 * main thread (search.ts, from history/call-filters.ts): `where` conditions over `calls` with named
 * parameters, the LIKE pattern and `hit`, the test of a call `c`'s texts.
 */
function chunkStatement(query, hasAfter) {
  const key = `${query.where.join(' AND ')}|${hasAfter}|${query.hit}`;
  let statement = statements.get(key);
  if (!statement) {
    const where = [...query.where];
    if (hasAfter) where.push('(at, id) < (@afterAt, @afterId)');
    statement = db.prepare(
      `WITH chunk AS MATERIALIZED (
         SELECT id, at FROM calls ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY at DESC, id DESC LIMIT @limit
       )
       SELECT chunk.id AS id, chunk.at AS at, (${query.hit}) AS hit
       FROM chunk JOIN calls c ON c.id = chunk.id`,
    );
    statements.set(key, statement);
  }
  return statement;
}

/** A row's statement by its select list (SQL text from the main thread: search.ts's selectList). */
const rowStatements = new Map();
function rowStatement(select) {
  let statement = rowStatements.get(select);
  if (!statement) {
    statement = db.prepare(`SELECT ${select} FROM calls WHERE id = ?`);
    rowStatements.set(select, statement);
  }
  return statement;
}

const newer = (a, b) => (a.at === b.at ? b.id - a.id : b.at - a.at);

/** Reads keys chunk by chunk; the chunk size adapts so that a chunk takes about CHUNK_TARGET_MS. */
function createScanner(query, after) {
  const params = { ...query.params, pattern: query.pattern };
  let cursor = after ?? null;
  let size = MIN_CHUNK;
  let ended = false;
  return {
    get ended() {
      return ended;
    },
    /** The next chunk's keys, newest first, each with `hit`; [] at the end of the history. */
    next() {
      if (ended) return [];
      const started = performance.now();
      const statement = chunkStatement(query, cursor !== null);
      const keys = statement.all({
        ...params,
        limit: size,
        ...(cursor ? { afterAt: cursor.at, afterId: cursor.id } : {}),
      });
      keys.sort(newer);
      if (keys.length < size) ended = true;
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
 * A page search: up to `want` matches, newest first, stopping early once `budgetMs` (when given)
 * has passed. Answers once: rows, whether it stopped early, rows examined, the last key examined.
 */
function searchJob(message) {
  const { want, select, budgetMs } = message;
  const started = performance.now();
  const scanner = createScanner(message.query, message.after);
  const fetch = rowStatement(select);
  const rows = [];
  let scanned = 0;
  let last = null;
  return {
    step() {
      const keys = scanner.next();
      for (const key of keys) {
        scanned++;
        last = { at: key.at, id: key.id };
        if (key.hit) {
          const row = fetch.get(key.id);
          // Deleted since the chunk was read (retention): skip it.
          if (row) rows.push(row);
          if (rows.length >= want) return this.answer(false);
        }
      }
      if (scanner.ended) return this.answer(false);
      if (budgetMs !== null && budgetMs !== undefined && performance.now() - started >= budgetMs)
        return this.answer(true);
      return true;
    },
    answer(stopped) {
      parentPort.postMessage({ id: message.id, type: 'page', rows, stopped, scanned, last });
      return false;
    },
  };
}

/**
 * An export: batches of up to `batchSize` matches, one per `next` message (pull-based: at most one
 * batch is held here), no time budget. Keys read but not yet used wait for the next batch.
 */
function scanJob(message) {
  const { batchSize, select } = message;
  const scanner = createScanner(message.query, null);
  const fetch = rowStatement(select);
  let pending = [];
  let batch = [];
  return {
    waiting: false,
    step() {
      if (pending.length === 0) pending = scanner.next();
      let i = 0;
      for (; i < pending.length; i++) {
        const key = pending[i];
        if (!key.hit) continue;
        const row = fetch.get(key.id);
        if (row) batch.push(row);
        if (batch.length >= batchSize) {
          i++;
          break;
        }
      }
      pending = pending.slice(i);
      const done = pending.length === 0 && scanner.ended;
      if (batch.length >= batchSize || done) {
        parentPort.postMessage({ id: message.id, type: 'batch', rows: batch, done });
        batch = [];
        if (done) jobs.delete(message.id);
        else this.waiting = true;
        return false;
      }
      return true;
    },
  };
}

const jobs = new Map();
const runnable = [];
let pumping = false;

/**
 * Every BREATHE_EVERY_MS of work the worker pauses for BREATHE_MS holding no read transaction. A
 * WAL file is rewound to its start only when no reader is using it; a worker that always has a
 * chunk under way would let the WAL grow for as long as searches keep coming.
 */
const BREATHE_EVERY_MS = 250;
const BREATHE_MS = 20;
let busySince = 0;

function kick() {
  if (!pumping && runnable.length > 0) {
    pumping = true;
    const now = performance.now();
    if (busySince === 0) busySince = now;
    if (now - busySince >= BREATHE_EVERY_MS) {
      busySince = 0;
      setTimeout(pump, BREATHE_MS);
    } else {
      setImmediate(pump);
    }
  } else if (runnable.length === 0) {
    busySince = 0;
  }
}

function pump() {
  pumping = false;
  const job = runnable.shift();
  if (job && jobs.get(job.id) === job.run) {
    let more = false;
    try {
      more = job.run.step();
    } catch (err) {
      parentPort.postMessage({
        id: job.id,
        type: 'error',
        message: err instanceof Error ? err.message : String(err),
      });
    }
    if (more) runnable.push(job);
    else if (!job.run.waiting) jobs.delete(job.id);
  }
  kick();
}

function start(id, run) {
  jobs.set(id, run);
  runnable.push({ id, run });
  kick();
}

parentPort.on('message', (message) => {
  switch (message.type) {
    case 'search':
      start(message.id, searchJob(message));
      break;
    case 'scan':
      start(message.id, scanJob(message));
      break;
    case 'next': {
      const run = jobs.get(message.id);
      if (run?.waiting) {
        run.waiting = false;
        runnable.push({ id: message.id, run });
        kick();
      }
      break;
    }
    case 'cancel':
      jobs.delete(message.id);
      break;
    case 'close':
      jobs.clear();
      runnable.length = 0;
      db.close();
      parentPort.close();
      break;
  }
});
