// Two builds of the server side by side: the same rows loaded in turn, round after round, so the
// machine's drift falls on both alike. What bench:quick cannot tell from noise (its node-soap row
// alone moves by a third from run to run on a shared machine) this can: a change's cost per request.
//   git worktree add /tmp/base <commit> && (cd /tmp/base && pnpm install --offline && pnpm --filter @school/server build)
//   BENCH_A=/tmp/base/apps/server/dist/server.js node apps/server/bench/ab.mjs
//   BENCH_B defaults to this checkout's build; BENCH_ROUNDS (5), BENCH_SECONDS (4), BENCH_ROWS (soap,get,healthz).
//   BENCH_A=apps/server/bench/bare.mjs BENCH_ROWS=healthz node apps/server/bench/ab.mjs  (ours against the bare route)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, fullSpeed, SOAP_AUTHCODE as SOAP, TICK_US } from './full-speed.mjs';
import { NO_LIMITS, startProcess, stopAll } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const builds = {
  A: process.env.BENCH_A,
  B: process.env.BENCH_B ?? path.join(here, '../dist/server.js'),
};
if (!builds.A) {
  console.log('BENCH_A=<another build of apps/server/dist/server.js> is required');
  process.exit(2);
}
const GET = { method: 'GET', path: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456' };
const ALL_ROWS = {
  soap: ['SOAP 1.1 AuthCode', SOAP],
  get: ['HTTP GET AuthCode', GET],
  healthz: ['/healthz', { method: 'GET', path: '/healthz' }],
};
const ROWS = (process.env.BENCH_ROWS ?? 'soap,get,healthz').split(',').map((name) => {
  const row = ALL_ROWS[name.trim()];
  if (!row) throw new Error(`BENCH_ROWS: no row ${name} (${Object.keys(ALL_ROWS).join(', ')})`);
  return row;
});

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-ab-'));
try {
  const servers = {};
  for (const [name, file] of Object.entries(builds))
    servers[name] = await startProcess(file, {
      DATA_DIR: path.join(dataDir, name),
      SQLITE_SYNCHRONOUS: 'FULL',
      ...NO_LIMITS,
    });
  const us = {};
  for (const server of Object.values(servers))
    for (const [, request] of ROWS) await fullSpeed(server.url, request, 1);
  for (let round = 0; round < rounds; round++)
    // A then B, then B then A: neither always goes first.
    for (const [row, request] of ROWS)
      for (const name of round % 2 ? ['B', 'A'] : ['A', 'B']) {
        const server = servers[name];
        const before = cpuTicks(server.child.pid);
        const answered = await fullSpeed(server.url, request, seconds);
        const key = `${row}|${name}`;
        us[key] ??= [];
        us[key].push(((cpuTicks(server.child.pid) - before) * TICK_US) / answered);
      }
  console.log(
    `A = ${builds.A}\nB = ${builds.B}\n${rounds} rounds of ${seconds} s a row, µs of server CPU per request`,
  );
  console.log(
    `${'row'.padEnd(20)}${'A median'.padStart(10)}${'B median'.padStart(10)}${'B ÷ A'.padStart(8)}   B ÷ A each round`,
  );
  for (const [row] of ROWS) {
    const a = us[`${row}|A`];
    const b = us[`${row}|B`];
    const each = a.map((x, i) => (b[i] / x).toFixed(2)).join(' ');
    console.log(
      `${row.padEnd(20)}${median(a).toFixed(0).padStart(10)}${median(b).toFixed(0).padStart(10)}${(median(b) / median(a)).toFixed(2).padStart(8)}   ${each}`,
    );
  }
} finally {
  await stopAll();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
