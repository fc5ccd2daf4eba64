// What a retry storm costs: the server's CPU per SOAP AuthCode (user + system, every thread, from
// /proc) at saturation while the primary SMS gateway refuses everything (its circuit open, the
// fallback serving), against the same load on a healthy gateway. Nothing done per call may grow
// with failures (a window, a queue, a table re-read per attempt): the storm stays within 1.5× of
// the healthy figure. Both servers run side by side and are loaded in turn, round after round, so
// the machine's drift falls on both alike; the medians are compared.
// Both send through a real HTTP gateway (a local server answering at once), SQLite FULL, limits
// off, saturated by wrk (one thread, 16 connections; autocannon without it).
//   node bench/retry-storm.mjs            (BENCH_SECONDS, 5 a row; BENCH_ROUNDS, 4; BENCH_SYNCHRONOUS, FULL)
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, fullSpeed, LOAD_TOOL, SOAP_AUTHCODE as SOAP, TICK_US } from './full-speed.mjs';
import { NO_LIMITS, startProcess, stopAll, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
const connections = 16;

if (process.platform !== 'linux') {
  console.log('retry-storm: reads /proc, so Linux only; skipped.');
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

const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-storm-'));
const ok = await gateway(true);
const refusing = await gateway(false);
const base = {
  SQLITE_SYNCHRONOUS: process.env.BENCH_SYNCHRONOUS ?? 'FULL',
  ...NO_LIMITS,
  SMS_PROVIDER: 'http',
  SMS_HTTP_BODY: 'to={to}&text={text}',
};
try {
  const healthy = await startProcess(path.join(here, '../dist/server.js'), {
    ...base,
    DATA_DIR: path.join(dataDir, 'healthy'),
    SMS_HTTP_URL: ok.url,
  });
  const storm = await startProcess(path.join(here, '../dist/server.js'), {
    ...base,
    DATA_DIR: path.join(dataDir, 'storm'),
    SMS_HTTP_URL: refusing.url,
    SMS_FALLBACK_PROVIDER: 'http',
    SMS_FALLBACK_HTTP_URL: ok.url,
    SMS_FALLBACK_HTTP_BODY: 'to={to}&text={text}',
  });
  // Warmed up; the storm's primary circuit opens within these seconds, then the fallback takes every SMS.
  await saturate(healthy.url, 3);
  await saturate(storm.url, 3);
  const healthyUs = [];
  const stormUs = [];
  const rates = { healthy: [], storm: [] };
  for (let round = 0; round < rounds; round++)
    for (const which of round % 2 ? ['storm', 'healthy'] : ['healthy', 'storm']) {
      const server = which === 'healthy' ? healthy : storm;
      let n = 0;
      const us = await measure(server, async () => {
        n = await saturate(server.url, seconds);
        return n;
      });
      (which === 'healthy' ? healthyUs : stormUs).push(us);
      rates[which].push(n / seconds);
    }
  await stopProcess(healthy.child);
  await stopProcess(storm.child);

  console.log(
    `SOAP AuthCode through an HTTP gateway at saturation (${LOAD_TOOL}, ${connections} connections), SQLite ${base.SQLITE_SYNCHRONOUS}: µs of the server's CPU per call, ${rounds} rounds of ${seconds} s`,
  );
  const list = (xs) => xs.map((x) => x.toFixed(0)).join(' ');
  console.log(
    `healthy gateway                            median ${median(healthyUs).toFixed(0)} µs (${median(rates.healthy).toFixed(0)} calls/s)   rounds: ${list(healthyUs)}`,
  );
  console.log(
    `primary refusing, fallback serving         median ${median(stormUs).toFixed(0)} µs (${median(rates.storm).toFixed(0)} calls/s)   rounds: ${list(stormUs)}`,
  );
  const ratio = median(stormUs) / median(healthyUs);
  console.log(
    `retry storm ÷ healthy ${ratio.toFixed(2)} (target ≤ 1.5: ${ratio <= 1.5 ? 'met' : 'NOT met'})`,
  );
} finally {
  await stopAll();
  ok.close();
  refusing.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
