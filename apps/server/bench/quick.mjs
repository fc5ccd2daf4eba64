// pnpm bench:quick — the guard every change that touches the server runs before it lands
// (docs/performance.md#the-guard-pnpm-benchquick). In under a minute it starts the built server (SQLite,
// SQLITE_SYNCHRONOUS=FULL, the log providers, limits off), node-soap hosting the same WSDL
// (bench/node-soap.mjs) and the bare Fastify route (bench/bare.mjs), loads each row for
// BENCH_SECONDS (5) once every server has been warmed up on every row, and prints the server process's CPU time per request
// (user + system, every thread, from /proc/<pid>/stat), with the ratios the hot path is held to
// and the last landed ratios beside them. A ratio more than 10 % worse than the landed one is
// flagged: say why in the change's note, or the change is not done.
// The load comes from wrk (`apt-get install wrk`), one thread and BENCH_CONNECTIONS (16)
// connections, which saturates even the bare route; without wrk it falls back to autocannon,
// whose JavaScript client cannot, so its ratios are not comparable with wrk's (it says so).
// Ratios, not times: the three servers are measured side by side in one run on this machine.
//   pnpm bench:quick
//   BENCH_SECONDS=8 node apps/server/bench/quick.mjs
//   BENCH_SERVER=/tmp/base/apps/server/dist/server.js node apps/server/bench/quick.mjs  (another build)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, fullSpeed, LOAD_TOOL, SOAP_AUTHCODE as SOAP, TICK_US } from './full-speed.mjs';
import { startProcess, stopAll, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);

if (process.platform !== 'linux') {
  console.log('bench:quick reads /proc, so Linux only; skipped.');
  process.exit(0);
}

const GET = { method: 'GET', path: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456' };
const HEALTHZ = { method: 'GET', path: '/healthz' };
const NO_LIMITS = {
  AUTHCODE_LIMIT_PER_PHONE: 'off',
  AUTHCODE_LIMIT_PER_IP: 'off',
  AUTHCODE_LIMIT_PER_RANGE: 'off',
  ASMX_LIMIT_PER_IP: 'off',
};
const load = (url, request, duration) => fullSpeed(url, request, duration, connections);
const TOOL = LOAD_TOOL;

/** µs of the server's CPU per request, and requests per second, under `connections` at full speed. */
async function row(server, request) {
  const before = cpuTicks(server.child.pid);
  const answered = await load(server.url, request, seconds);
  const used = cpuTicks(server.child.pid) - before;
  return { rps: answered / seconds, us: (used * TICK_US) / answered };
}

/** The last landed ratios: the `bench:quick landed` block of docs/performance.md. */
function landed() {
  const doc = fs.readFileSync(path.join(here, '../../../docs/performance.md'), 'utf8');
  const block = /```text\nbench:quick landed\n([\s\S]*?)```/.exec(doc);
  const figures = new Map();
  let tool;
  for (const line of block?.[1]?.split('\n') ?? []) {
    const [name, value] = line.trim().split(/\s+/);
    if (name === 'tool') tool = value;
    else if (name && Number.isFinite(Number(value))) figures.set(name, Number(value));
  }
  return { tool, figures };
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-quick-'));
const wsdlFile = path.join(dataDir, 'AuthCodeSending.wsdl');
try {
  const ours = await startProcess(process.env.BENCH_SERVER ?? path.join(here, '../dist/server.js'), {
    DATA_DIR: path.join(dataDir, 'ours'),
    SQLITE_SYNCHRONOUS: 'FULL',
    ...NO_LIMITS,
  });
  const wsdl = await fetch(`${ours.url}/AuthCodeSending.asmx?WSDL`);
  if (!wsdl.ok) throw new Error(`?WSDL: ${wsdl.status}`);
  fs.writeFileSync(wsdlFile, await wsdl.text());
  const nodeSoap = await startProcess(path.join(here, 'node-soap.mjs'), { WSDL_FILE: wsdlFile });
  const bare = await startProcess(path.join(here, 'bare.mjs'), {});
  // Each server warmed up on every row it serves before any is measured: the CPU counted is every
  // thread's, V8's optimising compiler included, and the first row measured would pay for it.
  for (const [server, requests] of [
    [ours, [SOAP, GET, HEALTHZ]],
    [nodeSoap, [SOAP]],
    [bare, [SOAP, HEALTHZ]],
  ])
    for (const request of requests) await load(server.url, request, 1);
  const rows = [
    ['bare route, same SOAP bytes', await row(bare, SOAP)],
    ['bare route, /healthz', await row(bare, HEALTHZ)],
    ['node-soap, same WSDL, records nothing', await row(nodeSoap, SOAP)],
    ['ours, SOAP 1.1 AuthCode (durable)', await row(ours, SOAP)],
    ['ours, HTTP GET AuthCode (durable)', await row(ours, GET)],
    ['ours, /healthz', await row(ours, HEALTHZ)],
  ];
  for (const server of [ours, nodeSoap, bare]) await stopProcess(server.child);
  const by = new Map(rows);
  const us = (name) => by.get(name).us;
  console.log(
    `bench:quick — ${TOOL}, ${connections} connections, ${seconds} s a row; µs = the server's CPU per request`,
  );
  console.log(`${'row'.padEnd(42)}${'req/s'.padStart(8)}${'µs/req'.padStart(9)}`);
  for (const [name, r] of rows)
    console.log(`${name.padEnd(42)}${r.rps.toFixed(0).padStart(8)}${r.us.toFixed(0).padStart(9)}`);
  const ratios = [
    [
      'soap-authcode/node-soap',
      us('ours, SOAP 1.1 AuthCode (durable)') / us('node-soap, same WSDL, records nothing'),
      2.5,
    ],
    [
      'get-authcode/node-soap',
      us('ours, HTTP GET AuthCode (durable)') / us('node-soap, same WSDL, records nothing'),
      2.5,
    ],
    ['healthz/bare', us('ours, /healthz') / us('bare route, /healthz'), 1.3],
  ];
  const { tool: landedTool, figures: before } = landed();
  if (landedTool !== undefined && landedTool !== TOOL) {
    console.log(`\nThe landed ratios were measured with ${landedTool}, these with ${TOOL}: not comparable.`);
    before.clear();
  }
  console.log(
    `\n${'ratio'.padEnd(26)}${'now'.padStart(7)}${'landed'.padStart(8)}${'target'.padStart(8)}  verdict`,
  );
  for (const [name, now, target] of ratios) {
    const was = before.get(name);
    const change =
      was === undefined ? '' : `${now > was ? '+' : ''}${(((now - was) / was) * 100).toFixed(0)} %`;
    const worse = was !== undefined && now > was * 1.1;
    console.log(
      `${name.padEnd(26)}${now.toFixed(2).padStart(7)}${(was?.toFixed(2) ?? '—').padStart(8)}${`≤ ${target}`.padStart(8)}  ${change}${worse ? ' WORSE than landed by more than 10 %: say why' : ''}${now <= target ? ' (target met)' : ''}`,
    );
  }
  console.log(`\nFor docs/performance.md once landed:\n\`\`\`text\nbench:quick landed\ntool ${TOOL}`);
  for (const [name, now] of ratios) console.log(`${name} ${now.toFixed(2)}`);
  console.log('```');
} finally {
  await stopAll();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
