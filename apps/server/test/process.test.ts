import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
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

/**
 * A call whose body is still arriving: the server cannot finish shutting down until it is
 * answered. `finish` sends the rest of the body; `answer` is the status line it got.
 */
async function callInFlight(port: number): Promise<{ finish: () => void; answer: Promise<string> }> {
  const rest = 'phone=%2B447911123456';
  const first = 'code=1234&';
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  const answer = new Promise<string>((resolve) => {
    socket.on('data', (chunk) => {
      received += chunk;
    });
    socket.on('close', () => resolve(received.split('\r\n')[0] ?? ''));
  });
  socket.write(
    'POST /AuthCodeSending.asmx/AuthCode HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n' +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${first.length + rest.length}\r\n\r\n${first}`,
  );
  await new Promise((r) => setTimeout(r, 200));
  return { finish: () => socket.write(rest), answer };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

  it('takes Ctrl-C relayed a second time (as pnpm start does) as one stop: finishes its work, exits 0', async () => {
    const port = await freePort();
    const proc = run(
      { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: path.join(data.dir, 'relayed'), LOG_LEVEL: 'warn' },
      data.dir,
    );
    await waitForHealth(`http://127.0.0.1:${port}/healthz`);
    const call = await callInFlight(port);
    // The terminal's SIGINT, then pnpm's copy of it a few milliseconds later.
    proc.child.kill('SIGINT');
    await sleep(20);
    proc.child.kill('SIGINT');
    await sleep(300);
    expect(proc.child.exitCode).toBeNull();
    call.finish();
    expect(await call.answer).toBe('HTTP/1.1 200 OK');
    expect(await proc.exited).toBe(0);
    expect(proc.output()).not.toMatch(/again|error/i);
  });

  it('stops at once, exiting 1, when asked again after the first second', async () => {
    const port = await freePort();
    const proc = run(
      { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: path.join(data.dir, 'twice'), LOG_LEVEL: 'warn' },
      data.dir,
    );
    await waitForHealth(`http://127.0.0.1:${port}/healthz`);
    const call = await callInFlight(port);
    proc.child.kill('SIGINT');
    await sleep(1200);
    expect(proc.child.exitCode).toBeNull();
    proc.child.kill('SIGINT');
    expect(await proc.exited).toBe(1);
    expect(proc.output()).toContain('SIGINT again: exiting without waiting for the shutdown.');
    call.finish();
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
