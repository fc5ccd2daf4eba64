import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDataDir, waitUntil } from './helpers.js';
import { freePort } from './server-process.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/** Whether the server answers /healthz 200 (not while it is starting, closing or gone). */
async function healthy(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

const waitForHealth = (port: number) =>
  waitUntil(() => healthy(port), { timeoutMs: 15_000, intervalMs: 20, what: `port ${port} healthy` });

/** The server has taken a stop signal: it is closing (Fastify answers 503) or no longer listens. */
const waitForStopping = (port: number) =>
  waitUntil(async () => !(await healthy(port)), { intervalMs: 5, what: `port ${port} stopping` });

/** A stop signal this long after the first is a second stop, not a relayed copy (server.ts). */
const RELAYED_SIGNAL_MS = 1000;

/**
 * A call whose body is still arriving: the server cannot finish shutting down until it is
 * answered. It asks `Expect: 100-continue` (as .NET clients do), so that the server's
 * `100 Continue` says the request is in its hands. `finish` sends the rest of the body; `answer`
 * is the status line of the final answer.
 */
async function callInFlight(port: number): Promise<{ finish: () => void; answer: Promise<string> }> {
  const rest = 'phone=%2B447911123456';
  const first = 'code=1234&';
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
  let continued: () => void = () => {};
  const taken = new Promise<void>((resolve) => {
    continued = resolve;
  });
  const answer = new Promise<string>((resolve) => {
    socket.on('data', (chunk) => {
      received += chunk;
      if (received.startsWith(CONTINUE)) continued();
    });
    socket.on('close', () => resolve(received.replace(CONTINUE, '').split('\r\n')[0] ?? ''));
  });
  socket.write(
    'POST /AuthCodeSending.asmx/AuthCode HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nExpect: 100-continue\r\n' +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${first.length + rest.length}\r\n\r\n${first}`,
  );
  await Promise.race([
    taken,
    answer.then((line) => {
      throw new Error(`answered before its body was complete: ${line}`);
    }),
  ]);
  return { finish: () => socket.write(rest), answer };
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
      await waitForHealth(port);
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
    await waitForHealth(port);
    const call = await callInFlight(port);
    // The terminal's SIGINT, then pnpm's copy of it a few milliseconds later (once the first is taken).
    proc.child.kill('SIGINT');
    await waitForStopping(port);
    proc.child.kill('SIGINT');
    // Proves a non-event (no exit while the call is under way): an idle server exits ~40 ms after SIGINT.
    await sleep(150);
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
    await waitForHealth(port);
    const call = await callInFlight(port);
    proc.child.kill('SIGINT');
    await waitForStopping(port);
    // Wall-clock time must pass in the server: the second signal counts as "again" only a second on.
    await sleep(RELAYED_SIGNAL_MS + 20);
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
      await waitForHealth(port);
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
