import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN_ENV } from './accounts.js';

/**
 * A server of a test's own (the suite's is global-setup.ts's), for settings the suite's server
 * does not have: the built server, on a fresh data folder and a free port, with ADMIN made at start.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ServerProcess {
  /** `http://127.0.0.1:{port}` */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startServerProcess(
  settings: Record<string, string>,
  options: { readonly port?: number; readonly name?: string } = {},
): Promise<ServerProcess> {
  const port = options.port ?? (await freePort());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `school-e2e-${options.name ?? 'server'}-`));
  const { NODE_ENV: _vitest, ...env } = process.env;
  const server: ChildProcess = spawn(process.execPath, [path.join(root, 'apps/server/dist/server.js')], {
    // No .env in the data folder: a developer's .env at the root does not leak in.
    cwd: dataDir,
    env: {
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      ...ADMIN_ENV,
      ...settings,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      const timer = setTimeout(() => server.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (server.exitCode !== null) {
      await stop();
      throw new Error(`the ${options.name ?? 'server'} exited during start (code ${server.exitCode})`);
    }
    try {
      if ((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) })).ok) break;
    } catch {}
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the ${options.name ?? 'server'} did not start within 20 s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, port, stop };
}
