// The hot path's work counted in instructions, which move less with the machine than time does:
// each server runs under valgrind's callgrind (`apt-get install valgrind`), and the instructions
// every thread of the process executes while it answers BENCH_REQUESTS (3 000) requests of a row
// are counted, after BENCH_WARM_SECONDS (20) of the same row uninstrumented (V8 compiles the hot
// code then). Rows and ratios as bench:quick's: ours (SQLite FULL, the log providers, limits off)
// against node-soap hosting the same WSDL and the bare Fastify route, BENCH_ROUNDS (3) rounds of
// each row, medians. Not in `pnpm bench`: about 15 minutes.
//
// Why: CPU time per request moves with the VM: the same build measured 2.9–3.3 × node-soap on one
// VM and 3.7–4.2 × on another of the same kind (docs/performance.md#the-guard-pnpm-benchquick),
// where the loops of stage-floors.mjs ran at twice their time. Instructions count the work, not
// how fast the VM's caches and memory serve it; they are not the time, and a change that does less
// but misses the cache more can count fewer and take longer.
// What valgrind changes: it runs each server some 40 times slower and one thread at a time, so
// what time decides moves: group commits are smaller, finished attempts get their own commit
// after 10 ms more often than they ride in the next call's, and a WAL checkpoint (every 4 000
// frames) or a mark-compact falls in some rounds and not others. Compare rounds, not one figure.
//   node apps/server/bench/instructions.mjs
//   BENCH_ROWS=soap BENCH_REQUESTS=4000 node apps/server/bench/instructions.mjs   (rows: soap, get, healthz)
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SOAP_AUTHCODE as SOAP } from './full-speed.mjs';
import { median } from './median.mjs';
import { NO_LIMITS, startProcess, stopAll, stopProcess } from './server-process.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const requests = Number(process.env.BENCH_REQUESTS ?? 3000);
const warmSeconds = Number(process.env.BENCH_WARM_SECONDS ?? 20);
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const rowsWanted = new Set((process.env.BENCH_ROWS ?? 'soap,get,healthz').split(','));
const CONNECTIONS = 16;

const GET = { method: 'GET', path: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456' };
const HEALTHZ = { method: 'GET', path: '/healthz' };

try {
  await run('callgrind_control', ['--version']);
} catch {
  console.log('instructions.mjs counts with valgrind (apt-get install valgrind); not found, skipped.');
  process.exit(0);
}

/**
 * callgrind_control finds a process by a file named after its pid, user and host, which valgrind
 * names from USER and HOST: startProcess sets HOST for the server, so the same values are passed.
 */
const controlEnv = { ...process.env, USER: process.env.USER ?? 'root', HOST: '127.0.0.1' };
const control = (child, ...args) =>
  run('callgrind_control', [...args, String(child.pid)], { env: controlEnv });

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-instructions-'));

/** A server under callgrind, counting nothing until told to. */
async function counted(name, script, env) {
  const out = path.join(dataDir, `${name}.callgrind`);
  const server = await startProcess(
    script,
    { ...env, USER: controlEnv.USER },
    {
      wrapper: [
        'valgrind',
        '--tool=callgrind',
        '--instr-atstart=no',
        `--callgrind-out-file=${out}.%p`,
        `--log-file=${out}.%p.log`,
      ],
      startSeconds: 300,
    },
  );
  return { ...server, out: `${out}.${server.child.pid}` };
}

/** `total` requests through CONNECTIONS keep-alive connections, each a non-2xx failing the run. */
async function send(url, request, total) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const { hostname, port } = new URL(url);
  const one = () =>
    new Promise((resolve, reject) => {
      const headers = { ...request.headers };
      if (request.body) headers['content-length'] = Buffer.byteLength(request.body);
      const req = http.request(
        { agent, host: hostname, port, path: request.path, method: request.method, headers },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode < 300 ? resolve() : reject(new Error(`${request.path}: ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(request.body);
    });
  let left = total;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (left-- > 0) await one();
    }),
  );
  agent.destroy();
}

/** As many requests as `seconds` allow, uninstrumented. */
async function warm(url, request, seconds) {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) await send(url, request, 200);
}

/** The instructions the whole process ran for `requests` requests of `request`, per request. */
async function perRequest(server, request) {
  await warm(server.url, request, warmSeconds);
  await control(server.child, '--instr=on');
  await control(server.child, '--zero');
  await send(server.url, request, requests);
  const dumped = fs.readdirSync(dataDir).filter((f) => f.startsWith(path.basename(server.out)));
  await control(server.child, '--dump');
  await control(server.child, '--instr=off');
  const fresh = fs
    .readdirSync(dataDir)
    .filter((f) => f.startsWith(path.basename(server.out)) && !dumped.includes(f));
  let instructions = 0;
  for (const file of fresh) {
    const text = fs.readFileSync(path.join(dataDir, file), 'utf8');
    instructions += Number(/^summary: (\d+)/m.exec(text)?.[1] ?? /^totals: (\d+)/m.exec(text)?.[1] ?? 0);
    fs.rmSync(path.join(dataDir, file));
  }
  if (instructions === 0) throw new Error(`${server.out}: callgrind dumped no count`);
  return instructions / requests;
}

try {
  const ours = await counted('ours', path.join(here, '../dist/server.js'), {
    DATA_DIR: path.join(dataDir, 'ours'),
    SQLITE_SYNCHRONOUS: 'FULL',
    ...NO_LIMITS,
  });
  const wsdlFile = path.join(dataDir, 'AuthCodeSending.wsdl');
  const wsdl = await fetch(`${ours.url}/AuthCodeSending.asmx?WSDL`);
  if (!wsdl.ok) throw new Error(`?WSDL: ${wsdl.status}`);
  fs.writeFileSync(wsdlFile, await wsdl.text());
  const nodeSoap = await counted('node-soap', path.join(here, 'node-soap.mjs'), { WSDL_FILE: wsdlFile });
  const bare = await counted('bare', path.join(here, 'bare.mjs'), {});
  const rows = [
    ['node-soap, same WSDL, records nothing', nodeSoap, SOAP, 'node-soap'],
    ['ours, SOAP 1.1 AuthCode (durable)', ours, SOAP, 'soap'],
    ['ours, HTTP GET AuthCode (durable)', ours, GET, 'get'],
    ['bare route, /healthz', bare, HEALTHZ, 'healthz'],
    ['ours, /healthz', ours, HEALTHZ, 'healthz'],
  ].filter(
    ([, , , row]) =>
      rowsWanted.has(row) || (row === 'node-soap' && (rowsWanted.has('soap') || rowsWanted.has('get'))),
  );
  const figures = new Map(rows.map(([name]) => [name, []]));
  for (let r = 0; r < rounds; r++)
    for (const [name, server, request] of rows) figures.get(name).push(await perRequest(server, request));
  for (const server of [ours, nodeSoap, bare]) await stopProcess(server.child);
  console.log(
    `instructions — callgrind, ${CONNECTIONS} connections, ${requests} requests a row after ${warmSeconds} s of warm-up, ${rounds} round(s); thousands of instructions a request, every thread`,
  );
  console.log(`${'row'.padEnd(42)}${'median'.padStart(8)}  each round`);
  for (const [name, each] of figures)
    console.log(
      `${name.padEnd(42)}${(median(each) / 1000).toFixed(0).padStart(8)}  ${each.map((x) => (x / 1000).toFixed(0)).join(' ')}`,
    );
  const ratio = (a, b, target) => {
    if (!figures.has(a) || !figures.has(b)) return;
    const each = figures.get(a).map((x, i) => x / figures.get(b)[i]);
    console.log(
      `${`${a.split(',')[1]?.trim() ?? a} ÷ ${b.split(',')[0]}`.padEnd(42)}${median(each).toFixed(2).padStart(8)}  ${each.map((x) => x.toFixed(2)).join(' ')}  (the time target: ≤ ${target})`,
    );
  };
  console.log('');
  ratio('ours, SOAP 1.1 AuthCode (durable)', 'node-soap, same WSDL, records nothing', 2.5);
  ratio('ours, HTTP GET AuthCode (durable)', 'node-soap, same WSDL, records nothing', 2.5);
  ratio('ours, /healthz', 'bare route, /healthz', 1.3);
} finally {
  await stopAll();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
