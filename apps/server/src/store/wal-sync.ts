import fs from 'node:fs/promises';

/**
 * Makes SQLite's write-ahead log durable without holding the event loop.
 *
 * With `synchronous = FULL` SQLite calls fsync inside COMMIT, on the thread that runs it: ours,
 * the one that also answers requests. Instead the call recorder commits as NORMAL (the commit's
 * frames are written to the WAL, not flushed) and then waits for `durable()`: an fdatasync of the
 * WAL file on libuv's thread pool. A call is still answered only once its record is on disk, as
 * with FULL, while the event loop goes on parsing and answering other requests. SQLite keeps the
 * database safe from corruption in NORMAL mode on its own; the flush only adds durability.
 *
 * Flushes are grouped: whoever asks while one is under way waits for the next, which starts when
 * that one ends and covers everyone who asked meanwhile (a flush covers only what was written
 * before it started).
 */
export interface WalSync {
  /** Resolves once everything written to the WAL before this call is on disk. */
  durable(): Promise<void>;
  /** Waits for the flush under way, then closes the file. */
  close(): Promise<void>;
}

export function createWalSync(walPath: string): WalSync {
  let file: fs.FileHandle | undefined;
  let inode = 0;
  /** The flush under way, and the one after it (everyone who asked since the current one began). */
  let current: Promise<void> | undefined;
  let next: Promise<void> | undefined;

  async function open(): Promise<fs.FileHandle> {
    await file?.close();
    file = await fs.open(walPath, 'r');
    inode = (await file.stat()).ino;
    return file;
  }

  let checkedAt = 0;

  async function flush(): Promise<void> {
    await (file ?? (await open())).datasync();
    // SQLite keeps its WAL file (truncating or reusing it) while a connection is open. Should the
    // path ever name another file, flush that one too, and keep it from now on (looked at once a
    // second at most: a stat per flush is a system call every commit pays).
    if (Date.now() - checkedAt < 1000) return;
    checkedAt = Date.now();
    const now = await fs.stat(walPath).catch(() => undefined);
    if (now && now.ino !== inode) await (await open()).datasync();
  }

  function start(): Promise<void> {
    const run = flush().finally(() => {
      if (current === run) current = undefined;
    });
    current = run;
    return run;
  }

  return {
    durable() {
      if (!current) return start();
      if (!next) {
        next = current
          .catch(() => {})
          .then(() => {
            next = undefined;
            return start();
          });
      }
      return next;
    },
    async close() {
      await next?.catch(() => {});
      await current?.catch(() => {});
      await file?.close();
      file = undefined;
    },
  };
}
