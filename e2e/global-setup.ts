import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { ADMIN_ENV } from './tests/accounts.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

declare module 'vitest' {
  export interface ProvidedContext {
    baseUrl: string;
    artifactsDir: string;
    chromium: string;
  }
}

// The server's settings that would change what the tests see (addresses, namespace, phone
// rules, where the console is): a developer's shell may export them, the suite uses the defaults.
const SERVER_SETTINGS = [
  'PUBLIC_BASE_URL',
  'TRUST_PROXY',
  'SERVICE_NAMESPACE',
  'DEFAULT_PHONE_REGION',
  'MAX_BODY_BYTES',
  'ASMX_MAX_BODY_BYTES',
  'RECORD_MAX_BYTES',
  'SQLITE_SYNCHRONOUS',
  'CONSOLE_DIR',
  'ALLOWED_HOSTS',
  'SESSION_IDLE_TIMEOUT',
  'SESSION_MAX_AGE',
  'LOGIN_LIMIT_PER_USER',
  'LOGIN_LIMIT_PER_IP',
];

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves when /healthz answers 200; rejects if the process exits first or after `ms`. */
async function waitUntilHealthy(server: ChildProcess, baseUrl: string, ms: number): Promise<void> {
  let exited: string | undefined;
  const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    exited = `the server exited during start (code ${code}, signal ${signal}); its output is above`;
  };
  server.once('exit', onExit);
  try {
    const deadline = Date.now() + ms;
    for (;;) {
      if (exited) throw new Error(exited);
      try {
        if ((await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2_000) })).ok) return;
      } catch {}
      if (Date.now() > deadline)
        throw new Error(`the server did not answer ${baseUrl}/healthz within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    server.off('exit', onExit);
  }
}

async function stop(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((r) => server.once('exit', r));
  server.kill('SIGTERM');
  // The server finishes requests in flight and closes live tails; if it hangs, do not hang the run.
  const timer = setTimeout(() => server.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Builds the server and the console as `pnpm start` does, and starts the real built server on a
 * temporary data folder and a free port, for the whole suite.
 */
export default async function setup(project: TestProject) {
  if (!fs.existsSync(CHROMIUM)) {
    const message = `Chromium is not at ${CHROMIUM}. Install Debian's package (apt-get install -y chromium) or set CHROMIUM_PATH.`;
    // CI installs Chromium (.ci/run), so there a missing browser is a failure; on a developer's
    // machine without it the browser tests are skipped, loudly.
    if (process.env.CI) throw new Error(message);
    console.warn(`\n*** e2e tests skipped: ${message}\n`);
    project.provide('chromium', '');
    project.provide('baseUrl', '');
    project.provide('artifactsDir', '');
    return;
  }
  // Vitest sets NODE_ENV=test in this process. Inherited by the build, it would make Vite bundle
  // React's development build (warnings, double checks, slower): build and run with the
  // environment `pnpm start` has, so the suite tests what ships.
  const { NODE_ENV: _vitestNodeEnv, ...shellEnv } = process.env;
  execFileSync('pnpm', ['build'], { cwd: root, stdio: 'inherit', env: shellEnv });

  // Screenshots of this run only (the folder is git-ignored).
  const artifactsDir = path.join(root, 'e2e', 'test-results');
  fs.rmSync(artifactsDir, { recursive: true, force: true });
  fs.mkdirSync(artifactsDir, { recursive: true });

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-e2e-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...shellEnv,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    // The first admin, made at start (no user exists in a fresh data folder): tests log in as it.
    ...ADMIN_ENV,
  };
  for (const name of SERVER_SETTINGS) delete env[name];
  const server: ChildProcess = spawn(process.execPath, [path.join(root, 'apps/server/dist/server.js')], {
    // The server reads a .env file in its working directory: the data folder has none, so a
    // developer's .env at the root does not leak into the suite.
    cwd: dataDir,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const teardown = async () => {
    await stop(server);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitUntilHealthy(server, baseUrl, 30_000);
  } catch (err) {
    await teardown();
    throw err;
  }
  project.provide('baseUrl', baseUrl);
  project.provide('artifactsDir', artifactsDir);
  project.provide('chromium', CHROMIUM);
  return teardown;
}
