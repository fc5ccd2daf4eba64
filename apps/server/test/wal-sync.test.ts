import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { tempDataDir } from './helpers.js';

/** Every datasync, with the inode of the file it flushed. */
const flushed: number[] = [];

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  const open: typeof real.open = async (...args) => {
    const handle = await real.open(...args);
    const datasync = handle.datasync.bind(handle);
    handle.datasync = async () => {
      await datasync();
      flushed.push((await handle.stat()).ino);
    };
    return handle;
  };
  return { ...real, default: { ...real, open }, open };
});

const { createWalSync } = await import('../src/store/wal-sync.js');

describe('the WAL flush', () => {
  const data = tempDataDir();
  afterEach(() => {
    flushed.length = 0;
    vi.useRealTimers();
  });
  afterAll(() => data.remove());

  it('groups those who ask while a flush is under way into the next one', async () => {
    const wal = path.join(data.dir, 'a.db-wal');
    fs.writeFileSync(wal, 'frames');
    const sync = createWalSync(wal);
    await Promise.all(Array.from({ length: 200 }, () => sync.durable()));
    // The first flush began before the others asked; they share one more.
    expect(flushed.length).toBe(2);
    await sync.durable();
    expect(flushed.length).toBe(3);
    await sync.close();
  });

  it('follows the file if the path ever names another one', async () => {
    const wal = path.join(data.dir, 'b.db-wal');
    fs.writeFileSync(wal, 'frames');
    const first = fs.statSync(wal).ino;
    const sync = createWalSync(wal);
    await sync.durable();
    // Replaced (the old file stays open here, so the new one has an inode of its own).
    fs.writeFileSync(`${wal}.new`, 'new frames');
    fs.renameSync(`${wal}.new`, wal);
    const second = fs.statSync(wal).ino;
    expect(second).not.toBe(first);
    // The path is looked at once a second at most: the clock is moved a second on, not waited out.
    vi.setSystemTime(Date.now() + 1000);
    await sync.durable();
    expect(flushed).toEqual([first, first, second]);
    await sync.close();
  });
});
