// Where one SOAP AuthCode's CPU goes, stage by stage (docs/performance.md#the-stages-of-one-call-benchstagesmjs):
// the built server runs under `--cpu-prof` while wrk (autocannon without it) saturates it with
// SOAP AuthCode for BENCH_SECONDS (8) — SQLite FULL, the log providers, limits off — and each
// sample of the event loop's profile taken while the load ran (after 3 s of warm-up) is given to
// the innermost stage on its stack (the stages' functions are named below). µs per call = the
// stage's time ÷ the calls answered. The profile covers the event loop only; the last line is
// every thread's CPU over the same load, from /proc.
//   node bench/stages.mjs
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, fullSpeed, SOAP_AUTHCODE as SOAP, TICK_US } from './full-speed.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 8);

/**
 * The stages, each by the functions that run it: a sample goes to the stage of the innermost
 * such function on its stack (sealing inside the outbox's insert is sealing). Names are the
 * bundle's functions (dist/server.js keeps them) and Node's own; a name is matched exactly.
 */
const STAGES = [
  ['seal and open the SMS text (AES-GCM)', ['seal', 'open']],
  ['outbox insert (the delivery, its claim and attempt)', ['enqueueOnSqlite']],
  ['attempt settle (finished attempts, their statements)', ['settleAttempts', '#recordBatch']],
  ['record and commit (the call row, BEGIN and COMMIT)', ['insertCalls', 'sqliteTransaction', 'durableSync']],
  ['dispatch and send (hand-over, lane, provider)', ['#launch', '#attempt', '#send', 'take']],
  ['reading the envelope', ['readSoapRequest']],
  ['validation (parameters, the phone number)', ['validateParams']],
  ['the operation (limits, the SMS text)', ['AuthCode', 'runOperation']],
  ['the record and answer (masking, metrics, the reply)', ['recordExchange', 'exchange']],
  [
    'HTTP in: parse, route, onRequest hooks, body',
    ['parserOnHeadersComplete', 'onEnd', 'ContentTypeParser.run'],
  ],
  ['HTTP out: writing the answer', ['Reply.send', 'writev']],
  ['garbage collector', ['(garbage collector)']],
];

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-stages-'));
const profDir = path.join(dataDir, 'prof');
// The measured server's flags: the usual ones and the profiler (Node refuses it in NODE_OPTIONS).
process.env.BENCH_NODE_FLAGS = `${process.env.BENCH_NODE_FLAGS ?? '--max-semi-space-size=8'} --cpu-prof --cpu-prof-dir=${profDir}`;
const { startProcess, stopAll, stopProcess } = await import('./server-process.mjs');

try {
  const server = await startProcess(path.join(here, '../dist/server.js'), {
    DATA_DIR: dataDir,
    SQLITE_SYNCHRONOUS: 'FULL',
    AUTHCODE_LIMIT_PER_PHONE: 'off',
    AUTHCODE_LIMIT_PER_IP: 'off',
    AUTHCODE_LIMIT_PER_RANGE: 'off',
    ASMX_LIMIT_PER_IP: 'off',
  });
  await fullSpeed(server.url, SOAP, 3);
  const before = cpuTicks(server.child.pid);
  const from = Date.now();
  const answered = await fullSpeed(server.url, SOAP, seconds);
  const to = Date.now();
  const total = ((cpuTicks(server.child.pid) - before) * TICK_US) / answered;
  await stopProcess(server.child);
  // The profile ends as the process exits: the load's samples are those that far back from its end.
  const exited = Date.now();
  // The event loop's profile is the largest; the workers' are small.
  const [main] = fs
    .readdirSync(profDir)
    .map((f) => path.join(profDir, f))
    .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size);
  const profile = JSON.parse(fs.readFileSync(main, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOf = new Map();
  const stageFor = (id) => {
    if (stageOf.has(id)) return stageOf.get(id);
    let stage = byId.get(id).callFrame.functionName === '(idle)' ? 'idle' : 'other';
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const name = byId.get(cur).callFrame.functionName;
      const found = STAGES.find(([, fns]) => fns.includes(name));
      if (found) {
        stage = found[0];
        break;
      }
    }
    stageOf.set(id, stage);
    return stage;
  };
  const spent = new Map();
  const start = profile.endTime - (exited - from) * 1000;
  const end = profile.endTime - (exited - to) * 1000;
  let at = profile.startTime;
  const inLoad = profile.samples.map((_, i) => {
    at += profile.timeDeltas[i] ?? 0;
    return at >= start && at < end;
  });
  profile.samples.forEach((id, i) => {
    if (!inLoad[i]) return;
    const stage = stageFor(id);
    spent.set(stage, (spent.get(stage) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const perCall = (us) => us / answered;
  console.log(
    `One SOAP AuthCode, stage by stage: ${answered} calls in ${seconds} s, µs of the event loop per call`,
  );
  for (const [name] of [...STAGES, ['other'], ['idle']]) {
    const us = spent.get(name) ?? 0;
    console.log(`${name.padEnd(66)}${perCall(us).toFixed(0).padStart(6)}`);
  }
  if (process.env.BENCH_DEBUG) {
    const other = new Map();
    // The functions the samples were in (self time), by stage: BENCH_DEBUG=other, or a stage's name.
    profile.samples.forEach((id, i) => {
      if (!inLoad[i] || !stageFor(id).startsWith(process.env.BENCH_DEBUG)) return;
      const f = byId.get(id).callFrame;
      const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber}`;
      other.set(key, (other.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
    });
    for (const [k, v] of [...other].sort((a, b) => b[1] - a[1]).slice(0, 25))
      console.log(`  ${perCall(v).toFixed(1).padStart(6)} ${k}`);
  }
  const loop = [...spent].filter(([k]) => k !== 'idle').reduce((n, [, v]) => n + v, 0);
  console.log(`${'event loop, busy'.padEnd(66)}${perCall(loop).toFixed(0).padStart(6)}`);
  console.log(`${'the whole process (every thread, /proc)'.padEnd(66)}${total.toFixed(0).padStart(6)}`);
} finally {
  await stopAll();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
