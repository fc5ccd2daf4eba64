import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_ADMIN, tempDataDir } from './helpers.js';

/** The built server (dist/server.js, built once by the global setup) for tests that run it as a process. */
export const SERVER_ENTRY = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  'dist',
  'server.js',
);

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** A server process started by a test (dist/server.js) on a port of its own. */
export interface ServerProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** Everything it wrote to stdout and stderr so far (its JSON log lines). */
  output(): string;
  /** SIGTERM, then waits for the exit (nothing if it has exited already). */
  stop(): Promise<void>;
}

/**
 * Starts the built server with `env` (a data folder of its own, the test admin, warn-level logs)
 * and waits until it answers: `ready` waits for `/readyz` 200, `listening` for any answer of
 * `/healthz` (a server started without its database answers, but is not ready).
 */
export async function startServerProcess(
  env: Record<string, string>,
  options: { readonly until?: 'ready' | 'listening'; readonly timeoutMs?: number } = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const data = tempDataDir();
  let output = '';
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: data.dir,
      LOG_LEVEL: 'warn',
      ADMIN_USERNAME: TEST_ADMIN.username,
      ADMIN_PASSWORD: TEST_ADMIN.password,
      ...env,
    },
    stdio: 'pipe',
  });
  child.stdout?.on('data', (c) => {
    output += c;
  });
  child.stderr?.on('data', (c) => {
    output += c;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      data.remove();
      resolve(code);
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const path = options.until === 'listening' ? '/healthz' : '/readyz';
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    try {
      if ((await fetch(`${url}${path}`)).ok) break;
    } catch {}
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`the server did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    child,
    exited,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** An AuthCode over HTTP GET, as an old client sends it; resolves with the status (0: no answer). */
export async function authCodeOverGet(base: string, phone: string, code: string): Promise<number> {
  try {
    const res = await fetch(
      `${base}/AuthCodeSending.asmx/AuthCode?code=${code}&phone=${encodeURIComponent(phone)}`,
    );
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Runs `task` for 0 … count−1 with at most `width` at once; the results in order. */
export async function inParallel<T>(
  count: number,
  width: number,
  task: (i: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

/** A UK mobile number, distinct for each n below a million. */
export const testPhone = (n: number) => `+447911${String(n).padStart(6, '0')}`;
