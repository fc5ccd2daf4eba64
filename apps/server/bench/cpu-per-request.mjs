// CPU time per SOAP AuthCode request, by thread (Linux): the main thread (the event loop: HTTP,
// reading the envelope, the operation, the record and its commit) and all other threads together
// (V8's GC helpers, libuv's pool with the WAL flushes, the search worker), read from
// /proc/<pid>/task/*/stat over an autocannon round of BENCH_SECONDS (8) with 32 connections,
// SQLITE_SYNCHRONOUS=FULL, log providers, limits off. req/s says how fast; µs per request says
// where the cost is, and whether the event loop was the limit (its busy share).
// With BENCH_BASELINE=<another build's server.js> the two alternate, BENCH_ROUNDS (3) rounds each,
// so that a change is measured against what it changed on the same machine at the same time.
//   node bench/cpu-per-request.mjs
//   BENCH_BASELINE=/tmp/base/apps/server/dist/server.js node bench/cpu-per-request.mjs
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startProcess, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const baseline = process.env.BENCH_BASELINE;
const TICK_US = 1_000_000 / 100; // USER_HZ is 100 on Linux

if (process.platform !== 'linux') {
  console.log('cpu-per-request: reads /proc, so Linux only; skipped.');
  process.exit(0);
}

const request = {
  method: 'POST',
  path: '/AuthCodeSending.asmx',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
  body: '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>',
};
const NO_LIMITS = {
  AUTHCODE_LIMIT_PER_PHONE: 'off',
  AUTHCODE_LIMIT_PER_IP: 'off',
  AUTHCODE_LIMIT_PER_RANGE: 'off',
  ASMX_LIMIT_PER_IP: 'off',
};

/** CPU ticks (user + system) of each thread of `pid`, by thread id. */
function threadTicks(pid) {
  const ticks = new Map();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // Fields after the command (in parentheses, which may hold spaces): utime is the 14th field.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks.set(tid, Number(fields[11]) + Number(fields[12]));
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ticks;
}

async function round(name, script) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-cpu-'));
  const { url, child } = await startProcess(script, { DATA_DIR: dataDir, ...NO_LIMITS });
  try {
    await autocannon({ url, connections: 32, duration: 2, requests: [request] });
    const before = threadTicks(child.pid);
    const result = await autocannon({ url, connections: 32, duration: seconds, requests: [request] });
    const after = threadTicks(child.pid);
    if (result.non2xx > 0 || result.errors > 0)
      throw new Error(`${name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
    let main = 0;
    let other = 0;
    for (const [tid, end] of after) {
      const spent = (end - (before.get(tid) ?? 0)) * TICK_US;
      if (tid === String(child.pid)) main += spent;
      else other += spent;
    }
    const requests = result.requests.total;
    return {
      name,
      rps: result.requests.average,
      main: main / requests,
      other: other / requests,
      busy: main / (seconds * 1e6),
    };
  } finally {
    await stopProcess(child);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const builds = [{ name: 'this build', script: path.join(here, '../dist/server.js') }];
if (baseline) builds.unshift({ name: 'baseline', script: path.resolve(baseline) });
console.log(
  `CPU per SOAP AuthCode request (SQLite FULL, 32 connections, ${seconds} s rounds${baseline ? `, ${rounds} alternating rounds` : ''})`,
);
console.log('build          req/s   main thread µs/req (busy)   other threads µs/req');
const results = [];
for (let r = 0; r < (baseline ? rounds : 1); r++) {
  for (const build of builds) {
    const m = await round(build.name, build.script);
    results.push(m);
    console.log(
      `${m.name.padEnd(12)} ${m.rps.toFixed(0).padStart(7)}   ${m.main.toFixed(0).padStart(8)} (${(m.busy * 100).toFixed(0)} %)          ${m.other.toFixed(0).padStart(8)}`,
    );
  }
}
if (baseline) {
  const mean = (name, key) => {
    const of = results.filter((m) => m.name === name);
    return of.reduce((s, m) => s + m[key], 0) / of.length;
  };
  console.log(
    `this build vs baseline: ${(mean('this build', 'rps') / mean('baseline', 'rps')).toFixed(2)} × the req/s, ` +
      `${(mean('this build', 'main') / mean('baseline', 'main')).toFixed(2)} × the main thread's µs per request`,
  );
}
