// Whether a call's cost depends on the load: the server's CPU per SOAP AuthCode (user + system,
// every thread, from /proc) at 25 %, 50 % and 100 % of its saturation, and at saturation while the
// primary SMS gateway refuses everything (its circuit open, the fallback serving: a retry storm).
// Nothing done per call may grow with the traffic, a window, a queue or a table, so the first three
// stay within 1.25× of each other and the storm within 1.5× of the healthy saturation.
// Both rows send through a real HTTP gateway (a local server answering at once), SQLite FULL,
// limits off. Saturation is wrk (one thread, 16 connections; autocannon without it); the paced
// rows are bench/paced.mjs (evenly spaced requests, in a process of its own).
//   node bench/load-shape.mjs                           (BENCH_SECONDS, 8; BENCH_SYNCHRONOUS, FULL)
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, fullSpeed, LOAD_TOOL, SOAP_AUTHCODE as SOAP, TICK_US } from './full-speed.mjs';
import { runScript } from './run-script.mjs';
import { startProcess, stopAll, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = 16;

if (process.platform !== 'linux') {
  console.log('load-shape: reads /proc, so Linux only; skipped.');
  process.exit(0);
}

/** A gateway on this machine: `ok` answers 200 with a message id at once, else 503 at once. */
async function gateway(ok) {
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (ok) res.writeHead(200, { 'content-type': 'application/json' }).end(`{"id":"m${++n}"}`);
      else res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"unavailable"}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/send`, close: () => server.close() };
}

const saturate = (url, duration) => fullSpeed(url, SOAP, duration, connections);

/** µs of CPU per call while `load` runs; `load` answers how many calls were answered. */
async function measure(server, load) {
  const before = cpuTicks(server.child.pid);
  const answered = await load();
  return ((cpuTicks(server.child.pid) - before) * TICK_US) / answered;
}

async function paced(url, rate) {
  const result = await runScript('paced.mjs', url, SOAP, { rate, seconds });
  if (result.failed > 0) throw new Error(`paced at ${rate}/s: ${result.failed} failed`);
  return result.sent;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-shape-'));
const ok = await gateway(true);
const refusing = await gateway(false);
const base = {
  SQLITE_SYNCHRONOUS: process.env.BENCH_SYNCHRONOUS ?? 'FULL',
  AUTHCODE_LIMIT_PER_PHONE: 'off',
  AUTHCODE_LIMIT_PER_IP: 'off',
  AUTHCODE_LIMIT_PER_RANGE: 'off',
  ASMX_LIMIT_PER_IP: 'off',
  SMS_PROVIDER: 'http',
  SMS_HTTP_BODY: 'to={to}&text={text}',
};
try {
  const healthy = await startProcess(path.join(here, '../dist/server.js'), {
    ...base,
    DATA_DIR: path.join(dataDir, 'healthy'),
    SMS_HTTP_URL: ok.url,
  });
  await saturate(healthy.url, 3);
  let max = 0;
  const full = await measure(healthy, async () => {
    const n = await saturate(healthy.url, seconds);
    max = n / seconds;
    return n;
  });
  const half = await measure(healthy, () => paced(healthy.url, Math.round(max / 2)));
  const quarter = await measure(healthy, () => paced(healthy.url, Math.round(max / 4)));
  await stopProcess(healthy.child);

  const storm = await startProcess(path.join(here, '../dist/server.js'), {
    ...base,
    DATA_DIR: path.join(dataDir, 'storm'),
    SMS_HTTP_URL: refusing.url,
    SMS_FALLBACK_PROVIDER: 'http',
    SMS_FALLBACK_HTTP_URL: ok.url,
    SMS_FALLBACK_HTTP_BODY: 'to={to}&text={text}',
  });
  // The primary's circuit opens within the first seconds; then the fallback takes every SMS.
  await saturate(storm.url, 3);
  const stormed = await measure(storm, () => saturate(storm.url, seconds));
  await stopProcess(storm.child);

  // The machine's own floor at the same rates: the bare route answering the same bytes.
  const bare = await startProcess(path.join(here, 'bare.mjs'), {});
  await saturate(bare.url, 2);
  const bareAt = async (rate) => measure(bare, () => paced(bare.url, rate));
  const bareQuarter = await bareAt(Math.round(max / 4));
  const bareHalf = await bareAt(Math.round(max / 2));
  const bareSame = await bareAt(Math.round(max));
  await stopProcess(bare.child);

  console.log(
    `SOAP AuthCode through an HTTP gateway, SQLite ${base.SQLITE_SYNCHRONOUS}: µs of the server's CPU per call`,
  );
  console.log(`saturation ${max.toFixed(0)} calls/s (${LOAD_TOOL}, ${connections} connections)`);
  const rows = [
    ['25 % of saturation (paced)', quarter, bareQuarter],
    ['50 % of saturation (paced)', half, bareHalf],
    ['100 % (saturation)', full, bareSame],
    ['100 %, primary refusing, fallback serving', stormed],
  ];
  console.log(`${''.padEnd(44)}${'ours'.padStart(9)}${'bare route, same rate (paced)'.padStart(32)}`);
  for (const [name, us, floor] of rows)
    console.log(
      `${name.padEnd(44)}${`${us.toFixed(0)} µs`.padStart(9)}${(floor === undefined ? '' : `${floor.toFixed(0)} µs`).padStart(32)}`,
    );
  const spread = Math.max(quarter, half, full) / Math.min(quarter, half, full);
  console.log(
    `the load's shape: highest ÷ lowest of the first three ${spread.toFixed(2)} (target ≤ 1.25: ${spread <= 1.25 ? 'met' : 'NOT met'}); the bare route's at the same rates ${(Math.max(bareQuarter, bareHalf, bareSame) / Math.min(bareQuarter, bareHalf, bareSame)).toFixed(2)}`,
  );
  console.log(
    `retry storm ÷ healthy saturation ${(stormed / full).toFixed(2)} (target ≤ 1.5: ${stormed / full <= 1.5 ? 'met' : 'NOT met'})`,
  );
} finally {
  await stopAll();
  ok.close();
  refusing.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
