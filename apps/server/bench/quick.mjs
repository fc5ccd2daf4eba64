// pnpm bench:quick — the guard every change that touches the server runs before it lands
// (docs/performance.md#the-guard-pnpm-benchquick). In about a minute it starts the built server (SQLite,
// SQLITE_SYNCHRONOUS=FULL, the log providers, limits off), node-soap hosting the same WSDL
// (bench/node-soap.mjs) and the bare Fastify route (bench/bare.mjs), warms every server up on
// every row, then loads the rows one after another for BENCH_SECONDS (3) each, BENCH_ROUNDS (3)
// times over, and prints the server process's CPU time per request (user + system, every thread,
// from /proc/<pid>/stat), with the ratios the hot path is held to and the last landed ratios
// beside them. A ratio more than 10 % worse than the landed one is flagged: say why in the
// change's note, or the change is not done.
// Each ratio is the median of its rounds' ratios, each round's two rows measured seconds apart:
// on a shared VM node-soap's own row moved from 80 to 128 µs between two runs minutes apart, so a
// ratio taken from one measurement of each row moved with it.
// The load comes from wrk (`apt-get install wrk`), one thread and BENCH_CONNECTIONS (16)
// connections, which saturates even the bare route; without wrk it falls back to autocannon,
// whose JavaScript client cannot, so its ratios are not comparable with wrk's (it says so).
// Ratios, not times: the three servers are measured side by side in one run on this machine.
//   pnpm bench:quick
//   BENCH_SECONDS=5 BENCH_ROUNDS=5 node apps/server/bench/quick.mjs
//   BENCH_SERVER=/tmp/base/apps/server/dist/server.js node apps/server/bench/quick.mjs  (another build)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, fullSpeed, LOAD_TOOL, SOAP_AUTHCODE as SOAP, TICK_US } from './full-speed.mjs';
import { median } from './median.mjs';
import { startProcess, stopAll, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
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
  const measured = [
    ['bare route, same SOAP bytes', bare, SOAP],
    ['bare route, /healthz', bare, HEALTHZ],
    ['node-soap, same WSDL, records nothing', nodeSoap, SOAP],
    ['ours, SOAP 1.1 AuthCode (durable)', ours, SOAP],
    ['ours, HTTP GET AuthCode (durable)', ours, GET],
    ['ours, /healthz', ours, HEALTHZ],
  ];
  const ratioRows = [
    [
      'soap-authcode/node-soap',
      'ours, SOAP 1.1 AuthCode (durable)',
      'node-soap, same WSDL, records nothing',
      2.5,
    ],
    [
      'get-authcode/node-soap',
      'ours, HTTP GET AuthCode (durable)',
      'node-soap, same WSDL, records nothing',
      2.5,
    ],
    ['healthz/bare', 'ours, /healthz', 'bare route, /healthz', 1.3],
  ];
  /** Each row's figures, and each ratio's, one a round. */
  const byRow = new Map(measured.map(([name]) => [name, []]));
  const byRatio = new Map(ratioRows.map(([name]) => [name, []]));
  for (let r = 0; r < rounds; r++) {
    const round = new Map();
    for (const [name, server, request] of measured) round.set(name, await row(server, request));
    for (const [name, figure] of round) byRow.get(name).push(figure);
    for (const [name, a, b] of ratioRows) byRatio.get(name).push(round.get(a).us / round.get(b).us);
  }
  for (const server of [ours, nodeSoap, bare]) await stopProcess(server.child);
  console.log(
    `bench:quick — ${TOOL}, ${connections} connections, ${rounds} round(s) of ${seconds} s a row; µs = the server's CPU per request, medians of the rounds`,
  );
  console.log(`${'row'.padEnd(42)}${'req/s'.padStart(8)}${'µs/req'.padStart(9)}  µs each round`);
  for (const [name, figures] of byRow)
    console.log(
      `${name.padEnd(42)}${median(figures.map((f) => f.rps))
        .toFixed(0)
        .padStart(8)}${median(figures.map((f) => f.us))
        .toFixed(0)
        .padStart(9)}  ${figures.map((f) => f.us.toFixed(0)).join(' ')}`,
    );
  const ratios = ratioRows.map(([name, , , target]) => [
    name,
    median(byRatio.get(name)),
    target,
    byRatio.get(name),
  ]);
  const { tool: landedTool, figures: before } = landed();
  if (landedTool !== undefined && landedTool !== TOOL) {
    console.log(`\nThe landed ratios were measured with ${landedTool}, these with ${TOOL}: not comparable.`);
    before.clear();
  }
  console.log(
    `\n${'ratio'.padEnd(26)}${'now'.padStart(7)}${'landed'.padStart(8)}${'target'.padStart(8)}  verdict (each round)`,
  );
  for (const [name, now, target, each] of ratios) {
    const was = before.get(name);
    const change =
      was === undefined ? '' : `${now > was ? '+' : ''}${(((now - was) / was) * 100).toFixed(0)} %`;
    const worse = was !== undefined && now > was * 1.1;
    console.log(
      `${name.padEnd(26)}${now.toFixed(2).padStart(7)}${(was?.toFixed(2) ?? '—').padStart(8)}${`≤ ${target}`.padStart(8)}  ${change}${worse ? ' WORSE than landed by more than 10 %: say why' : ''}${now <= target ? ' (target met)' : ''} (${each.map((x) => x.toFixed(2)).join(' ')})`,
    );
  }
  console.log(`\nFor docs/performance.md once landed:\n\`\`\`text\nbench:quick landed\ntool ${TOOL}`);
  for (const [name, now] of ratios) console.log(`${name} ${now.toFixed(2)}`);
  console.log('```');
} finally {
  await stopAll();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
