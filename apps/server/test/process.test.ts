import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDataDir } from './helpers.js';
import { freePort } from './server-process.js';

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(serverDir, 'dist/server.js');

function run(
  env: Record<string, string>,
  cwd: string,
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let output = '';
  const child = spawn(process.execPath, [entry], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'pipe',
  });
  child.stdout?.on('data', (c) => {
    output += c;
  });
  child.stderr?.on('data', (c) => {
    output += c;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function waitForHealth(url: string, deadline = Date.now() + 15_000): Promise<void> {
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never became healthy`);
}

describe('the server process (dist/server.js)', () => {
  const data = tempDataDir();
  afterAll(() => data.remove());

  it('honours PORT, HOST and DATA_DIR, records calls, and shuts down gracefully on SIGTERM', async () => {
    const port = await freePort();
    const dataDir = path.join(data.dir, 'nested', 'data');
    const proc = run(
      { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
      data.dir,
    );
    try {
      await waitForHealth(`http://127.0.0.1:${port}/healthz`);
      const res = await fetch(`http://127.0.0.1:${port}/PushNotificationMobile.asmx/pushNoti`);
      expect(res.status).toBe(200);
      expect(fs.existsSync(path.join(dataDir, 'school-messaging.db'))).toBe(true);
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).toBe(0);
    expect(proc.output()).not.toMatch(/error/i);
  });

  it('reads a .env file in its working directory', async () => {
    const port = await freePort();
    const dir = path.join(data.dir, 'envdir');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, '.env'), `PORT=${port}\nHOST=127.0.0.1\nLOG_LEVEL=warn\n`);
    const proc = run({}, dir);
    try {
      await waitForHealth(`http://127.0.0.1:${port}/healthz`);
      expect(fs.existsSync(path.join(dir, 'data', 'school-messaging.db'))).toBe(true);
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).toBe(0);
  });

  it('stops at once on a bad value, naming the variable', async () => {
    const proc = run({ PORT: 'eighty', DATA_DIR: data.dir }, data.dir);
    expect(await proc.exited).toBe(1);
    expect(proc.output()).toContain('Invalid configuration:\n  PORT: ');
  });
});
