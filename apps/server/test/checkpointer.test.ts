import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { type CheckpointerOptions, startCheckpointer } from '../src/store/checkpointer.js';
import { tempDataDir } from './helpers.js';

function openWal(file: string): SQLite.Database {
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  db.pragma('wal_checkpoint(TRUNCATE)');
  return db;
}

const walBytes = (file: string) => fs.statSync(`${file}-wal`).size;

/** A checkpointer on `sqlite` (FULL), passing every 5 ms unless `options` says otherwise. */
const start = (
  sqlite: SQLite.Database,
  options: Pick<CheckpointerOptions, 'pauseWrites'> & Partial<CheckpointerOptions>,
) => startCheckpointer({ sqlite, synchronous: 'FULL', intervalMs: 5, ...options });

describe('WAL checkpoints in a worker thread', () => {
  const data = tempDataDir();
  afterAll(() => data.remove());

  it('keeps the log bounded while the main connection never checkpoints, pausing the writer to restart it', async () => {
    const file = path.join(data.dir, 'steady.db');
    const db = openWal(file);
    const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');
    const warnings: string[] = [];
    let paused = false;
    let writesWhilePaused = 0;
    const checkpointer = start(db, {
      resetFrames: 50,
      pauseWrites: async (work) => {
        paused = true;
        try {
          await work();
        } finally {
          paused = false;
        }
      },
      onWarning: (message) => warnings.push(message),
    });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);

    const body = 'x'.repeat(2048);
    /** One commit of a 2 KB row, never while the writer is paused, then a turn of the event loop. */
    const write = async () => {
      while (paused) await sleep(1);
      insert.run(body);
      if (paused) writesWhilePaused++;
      await new Promise((resolve) => setImmediate(resolve));
    };

    // The worker takes a moment to start, longer on a busy machine, and the log grows meanwhile;
    // its file never shrinks. Write until the worker has paused the writer once.
    let written = 0;
    const deadline = Date.now() + 30_000;
    while (checkpointer.stats().pauses === 0 && Date.now() < deadline) {
      await write();
      written++;
    }
    expect(checkpointer.stats().pauses).toBeGreaterThan(0);
    const atStart = walBytes(file);

    // Then 3 000 more: some 6 000 pages of log, 24 MB, if nothing copied them back and restarted it.
    let largest = atStart;
    for (let i = 0; i < 3000; i++) {
      await write();
      largest = Math.max(largest, walBytes(file));
    }
    written += 3000;
    await sleep(100);

    const stats = checkpointer.stats();
    expect(stats.running).toBe(true);
    expect(stats.pauses).toBeGreaterThan(1);
    expect(writesWhilePaused).toBe(0);
    // The log restarted from its beginning again and again: its file (as large as the log ever
    // was) grew past neither what the start left nor 2 MB, let alone 24.
    expect(largest).toBeLessThanOrEqual(Math.max(atStart, 2 * 1024 * 1024));
    expect(warnings).toEqual([]);

    await checkpointer.close();
    expect(checkpointer.stats().running).toBe(false);
    // SQLite's own checkpoints are back on for the main connection.
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    db.close();

    // Every row is in the database file: the log is gone once the last connection closes.
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const reopened = new SQLite(file, { readonly: true });
    expect(reopened.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: written });
    reopened.close();
  });

  it('copies what a quiet writer left in the log without pausing it', async () => {
    const file = path.join(data.dir, 'quiet.db');
    const db = openWal(file);
    let pauses = 0;
    const checkpointer = start(db, {
      resetFrames: 1000,
      pauseWrites: async (work) => {
        pauses++;
        await work();
      },
    });
    db.prepare('INSERT INTO rows (body) VALUES (?)').run('a row');
    // A reader of the database file alone, ignoring the log, sees the row once it is copied.
    const readFile = () => {
      const copy = path.join(data.dir, 'quiet-copy.db');
      fs.copyFileSync(file, copy);
      const reader = new SQLite(copy, { readonly: true });
      try {
        return reader.prepare('SELECT count(*) AS n FROM rows').get();
      } finally {
        reader.close();
      }
    };
    for (let i = 0; i < 100 && (readFile() as { n: number }).n === 0; i++) await sleep(10);
    expect(readFile()).toEqual({ n: 1 });
    expect(pauses).toBe(0);
    await checkpointer.close();
    db.close();
  });

  it('gives the checkpoints back to SQLite when its worker cannot run', async () => {
    const file = path.join(data.dir, 'gone.db');
    const db = openWal(file);
    // The worker opens the file by name, and it must exist.
    fs.rmSync(file);
    const warnings: string[] = [];
    const checkpointer = start(db, {
      intervalMs: 250,
      pauseWrites: (work) => work(),
      onWarning: (message) => warnings.push(message),
    });
    for (let i = 0; i < 200 && checkpointer.stats().running; i++) await sleep(10);
    expect(checkpointer.stats().running).toBe(false);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect(warnings.join('\n')).toMatch(/SQLite checkpoints on commit again/);
    await checkpointer.close();
    db.close();
  });
});
