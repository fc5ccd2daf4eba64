// Starting and stopping the servers the benches measure (dist/server.js, bare.mjs, …), each on a
// port of its own, answered once ready.
import { spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';

/** A port nothing listens on now, from the OS (a random one may be a client's ephemeral port under load). */
/** AuthCode's and the .asmx limits off: a bench's load comes from one caller, to few phones. */
export const NO_LIMITS = {
  AUTHCODE_LIMIT_PER_PHONE: 'off',
  AUTHCODE_LIMIT_PER_IP: 'off',
  AUTHCODE_LIMIT_PER_RANGE: 'off',
  ASMX_LIMIT_PER_IP: 'off',
};

export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * The flags every server runs with: the README's (`--max-semi-space-size=8`), or BENCH_NODE_FLAGS
 * (space-separated) to measure others.
 */
const nodeFlags = (process.env.BENCH_NODE_FLAGS ?? '--max-semi-space-size=8').split(' ').filter(Boolean);

/** The sealing key of the benches' PostgreSQL instances (32 bytes, base64). */
const BENCH_CODE_KEY = Buffer.alloc(32, 3).toString('base64');

/** Servers started and not yet exited: `stopAll` ends them if a bench fails half-way. */
const children = new Set();

/**
 * Starts `script` with `env` on a free port (PORT, HOST and a quiet LOG_LEVEL set; DATABASE_URL
 * cleared unless `env` gives one) and resolves once `readyPath` answers 200. Its stdout (the log)
 * is dropped, or with `stdout: 'pipe'` left to read on `child.stdout` (read it: a full pipe blocks
 * the server's writes). `nice` (a niceness, 1–19) runs it below the others' priority: on a machine
 * of two cores, what it makes the database do is then measured, not its own start's CPU.
 * `wrapper` runs it under another command (valgrind); `startSeconds` (30) is how long it may take
 * to answer.
 */
export async function startProcess(
  script,
  env,
  {
    readyPath = '/healthz',
    baseEnv = process.env,
    cwd = undefined,
    stdout = 'ignore',
    nice = 0,
    wrapper = [],
    startSeconds = 30,
  } = {},
) {
  const port = await freePort();
  // Instances on PostgreSQL seal auth codes with one shared key (CODE_ENCRYPTION_KEY is required there).
  const sealing = env.DATABASE_URL ? { CODE_ENCRYPTION_KEY: BENCH_CODE_KEY } : {};
  // `wrapper`: a command the server runs under (valgrind and its options), given Node's path after it.
  const [command, ...args] = [...wrapper, process.execPath, ...nodeFlags, script];
  const child = spawn(command, args, {
    cwd,
    env: {
      ...baseEnv,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
      ...sealing,
      ...env,
    },
    stdio: ['ignore', stdout, 'inherit'],
  });
  if (nice) os.setPriority(child.pid, nice);
  children.add(child);
  child.once('exit', () => children.delete(child));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < startSeconds * 20; i++) {
    if (child.exitCode !== null) break;
    try {
      if ((await fetch(`${url}${readyPath}`)).ok) return { url, child };
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`${script} did not start`);
}

/** SIGTERM, then SIGKILL after 15 s; resolves once it has exited. */
export async function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Kills whatever is still running (a bench that failed). */
export function killAll() {
  for (const child of children) child.kill('SIGKILL');
}

/** Stops every server still running, gracefully. */
export async function stopAll() {
  for (const child of [...children]) await stopProcess(child);
}
