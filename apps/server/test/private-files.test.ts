/**
 * The data folder holds password hashes, phone numbers, the code key and books: created private
 * (folders 0700, files 0600) whatever the umask the server is started with, and a warning at start
 * when an existing one is open to other users. The built server, started as a process under umask
 * 022, as a service manager or a shell would.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { consoleFetch, tempDataDir } from './helpers.js';
import { authCodeOverGet, type ServerProcess, startServerProcess } from './server-process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Every folder and file under `dir`, with its permission bits. */
function modes(dir: string): { path: string; mode: string; folder: boolean }[] {
  const out = [{ path: '.', mode: (fs.statSync(dir).mode & 0o777).toString(8), folder: true }];
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    out.push({
      path: path.relative(dir, full),
      mode: (fs.statSync(full).mode & 0o777).toString(8),
      folder: entry.isDirectory(),
    });
  }
  return out;
}

async function started(dataDir: string): Promise<ServerProcess> {
  const before = process.umask(0o022);
  try {
    const server = await startServerProcess({ DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    cleanups.push(() => server.stop());
    return server;
  } finally {
    process.umask(before);
  }
}

describe('the data folder', () => {
  it('is private, and so is every file in it, whatever the umask', async () => {
    const temp = tempDataDir();
    cleanups.push(temp.remove);
    const dataDir = path.join(temp.dir, 'data');
    const server = await started(dataDir);
    expect(await authCodeOverGet(server.url, '+447911123456', '4821')).toBe(200);
    const api = await consoleFetch(server.url);
    const book = await api('/api/books/2026-1/7B', {
      method: 'PUT',
      headers: { 'content-type': 'application/pdf' },
      body: '%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n',
    });
    expect(book.status).toBe(200);

    const found = modes(dataDir);
    // The database with its WAL, the code key, and the book are there.
    expect(found.some((f) => f.path.endsWith('.db-wal'))).toBe(true);
    expect(found.filter((f) => !f.folder).length).toBeGreaterThanOrEqual(4);
    expect(found.filter((f) => f.folder && f.mode !== '700')).toEqual([]);
    expect(found.filter((f) => !f.folder && f.mode !== '600')).toEqual([]);
    expect(server.output()).not.toMatch(/readable by other users/);
  });

  it('warns at start when an existing one is open to other users', async () => {
    const temp = tempDataDir();
    cleanups.push(temp.remove);
    fs.chmodSync(temp.dir, 0o755);
    const server = await started(temp.dir);
    expect(server.output()).toMatch(/DATA_DIR is readable by other users of this machine \(mode 0755\)/);
  });
});
