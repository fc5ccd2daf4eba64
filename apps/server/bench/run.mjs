// pnpm bench: the .asmx hot path against a bare Fastify route, measured in one run on this
// machine, printed as ratios. Not a test: shared machines are noisy, so compare ratios, not times.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

const soapRequest = {
  method: 'POST',
  path: '/AuthCodeSending.asmx',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
  body: '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>',
};

async function start(name, script, env) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, ['--max-semi-space-size=8', script], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { name, url, child };
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${name} did not start`);
}

async function load(url, request, duration) {
  const result = await autocannon({ url, connections, duration, requests: [request] });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-'));
// One phone from one address: the abuse limits are off here (the last row measures the per-phone
// limit, with a different phone on every request).
const NO_LIMITS = { AUTHCODE_LIMIT_PER_PHONE: 'off', AUTHCODE_LIMIT_PER_IP: 'off', ASMX_LIMIT_PER_IP: 'off' };
const serverScript = path.join(here, '../dist/server.js');
const targets = [
  ['bare Fastify route', path.join(here, 'bare.mjs'), {}],
  [
    'SOAP AuthCode, SQLITE_SYNCHRONOUS=FULL',
    serverScript,
    { DATA_DIR: path.join(dataRoot, 'full'), ...NO_LIMITS },
  ],
  [
    'SOAP AuthCode, SQLITE_SYNCHRONOUS=NORMAL',
    serverScript,
    { DATA_DIR: path.join(dataRoot, 'normal'), SQLITE_SYNCHRONOUS: 'NORMAL', ...NO_LIMITS },
  ],
  [
    'SOAP AuthCode, FULL, per-phone limit checked',
    serverScript,
    { DATA_DIR: path.join(dataRoot, 'limits'), AUTHCODE_LIMIT_PER_IP: 'off', ASMX_LIMIT_PER_IP: 'off' },
    true,
  ],
];

console.log(`autocannon: ${connections} connections, ${seconds} s per target, after a 2 s warm-up\n`);
const rows = [];
try {
  for (const [name, script, env, distinctPhones] of targets) {
    const server = await start(name, script, env);
    const request = distinctPhones
      ? {
          ...soapRequest,
          // A different phone each time, so that the per-phone limit is checked but never hit.
          setupRequest: (req) => ({
            ...req,
            body: soapRequest.body.replace(
              '+447911123456',
              `+4479111${String(Math.floor(Math.random() * 1e5)).padStart(5, '0')}`,
            ),
          }),
        }
      : soapRequest;
    try {
      await load(server.url, request, 2);
      rows.push({ name, ...(await load(server.url, request, seconds)) });
    } finally {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.once('exit', r));
    }
  }
} finally {
  fs.rmSync(dataRoot, { recursive: true, force: true });
}

const base = rows[0];
console.log(
  'target'.padEnd(44),
  'req/s'.padStart(9),
  'p50 ms'.padStart(8),
  'p99 ms'.padStart(8),
  '  throughput vs bare',
);
for (const r of rows) {
  console.log(
    r.name.padEnd(44),
    r.rps.toFixed(0).padStart(9),
    String(r.p50).padStart(8),
    String(r.p99).padStart(8),
    `  ${(r.rps / base.rps).toFixed(2)}`,
  );
}
