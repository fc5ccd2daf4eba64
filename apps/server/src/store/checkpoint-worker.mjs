// The WAL checkpointer: runs in a worker thread (node:worker_threads) with its own better-sqlite3
// connection on the store's SQLite file, and copies what the write-ahead log holds back into the
// database file, so that the main thread never does it. The protocol is described in checkpointer.ts.
//
// Plain JavaScript for the same reason as search-worker.mjs: Node 20 cannot load TypeScript in a
// Worker, and this file must run the same from apps/server/src (under Vitest) and from
// apps/server/dist (build.mjs copies it next to server.js). Its only import is better-sqlite3.
import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

const { file, synchronous, intervalMs, resetFrames } = workerData;

const db = new SQLite(file, { fileMustExist: true });
// A checkpoint syncs the WAL before it copies and the database file after (NORMAL and FULL alike).
db.pragma(`synchronous = ${synchronous}`);
// Never checkpoint on commit: this connection writes nothing, and PASSIVE never waits for a lock.
db.pragma('wal_autocheckpoint = 0');

const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

/** Frames in the WAL at which the main thread is asked to pause its writes, so the log can restart. */
let resetAt = resetFrames;
/** Waiting for the main thread's `paused`. */
let pausing = false;
let closed = false;

/** One PASSIVE checkpoint: copies every frame no reader still needs; never blocks the writer. */
function pass() {
  const { log, checkpointed } = checkpoint.get();
  return { log, checkpointed };
}

function tick() {
  if (pausing || closed) return;
  let result;
  try {
    result = pass();
  } catch (err) {
    parentPort.postMessage({
      type: 'error',
      message: err instanceof Error ? err.message : String(err),
      code: err?.code,
    });
    return;
  }
  // The log restarted (the main thread's first write after a complete checkpoint): back to the
  // usual threshold.
  if (result.log < resetAt - resetFrames) resetAt = resetFrames;
  // The log only restarts once a checkpoint has copied all of it and the writer then begins; under
  // a steady load a frame is always being added. Past `resetFrames`, ask for a pause in writes for
  // one last pass over what came in since this one.
  if (result.log >= resetAt) {
    pausing = true;
    parentPort.postMessage({ type: 'pause' });
  }
}

parentPort.on('message', (message) => {
  if (message.type === 'paused') {
    let result;
    try {
      result = pass();
    } catch (err) {
      result = { error: err instanceof Error ? err.message : String(err), code: err?.code };
    }
    pausing = false;
    // The log restarts with the main thread's next write, when this pass copied all of it; if a
    // reader still on an older snapshot kept some frames in use, it cannot yet. Either way the
    // writer is not paused again before the log has restarted or grown by another `resetFrames`.
    resetAt = (result.log ?? resetAt) + resetFrames;
    parentPort.postMessage({ type: 'resume', ...result });
  } else if (message.type === 'close') {
    closed = true;
    clearInterval(timer);
    db.close();
    parentPort.close();
  }
});

const timer = setInterval(tick, intervalMs);
