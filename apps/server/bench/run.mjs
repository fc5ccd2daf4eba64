// pnpm bench: the .asmx hot path against a bare Fastify route, measured in one run on this
// machine, printed as ratios. Not a test: shared machines are noisy, so compare ratios, not times.
// The same on PostgreSQL (a fresh database per row, bench/pg.mjs): one instance, and two instances
// on one database with the load split across both. Without a reachable PostgreSQL server those
// rows are skipped, with a line saying why. "SMS sent": the share of the auth codes queued so far
// that the dispatcher had sent when the load ended (it sends alongside, through the log provider):
// below 100 % the queue grows while calls are accepted at that rate.
// Then the hot path's targets (docs/performance.md), each printed with its figure and `met` / `NOT met`: our SOAP AuthCode
// against node-soap hosting the same WSDL (bench/node-soap.mjs) and against the bare route, HTTP GET
// AuthCode against the bare route, the outbox's backlog 2 s after BENCH_BACKLOG_SECONDS (20) at full
// load, p99 of SOAP AuthCode and of /healthz at half the SQLite FULL row's req/s, and the server's
// peak RSS under full load.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { connectAdmin, createDatabase } from './pg.mjs';
import { runScript } from './run-script.mjs';
import { startProcess, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const backlogSeconds = Number(process.env.BENCH_BACKLOG_SECONDS ?? 20);
const HALF_LOAD_SECONDS = 10;

const soapRequest = {
  method: 'POST',
  path: '/AuthCodeSending.asmx',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
  body: '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>',
};

async function start(name, script, env) {
  return { name, ...(await startProcess(script, env)) };
}

async function load(url, request, duration, share = connections, options = {}) {
  const result = await autocannon({ url, connections: share, duration, requests: [request], ...options });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-'));
// One phone from one address: the abuse limits are off here (the rows marked "per-phone limit"
// measure that limit, with a different phone on every request).
const NO_LIMITS = {
  AUTHCODE_LIMIT_PER_PHONE: 'off',
  AUTHCODE_LIMIT_PER_IP: 'off',
  AUTHCODE_LIMIT_PER_RANGE: 'off',
  ASMX_LIMIT_PER_IP: 'off',
};
const PHONE_LIMIT_ONLY = {
  AUTHCODE_LIMIT_PER_IP: 'off',
  AUTHCODE_LIMIT_PER_RANGE: 'off',
  ASMX_LIMIT_PER_IP: 'off',
};
const serverScript = path.join(here, '../dist/server.js');
const FULL = 'SOAP AuthCode, SQLITE_SYNCHRONOUS=FULL';
const NODE_SOAP = 'node-soap, same WSDL, records nothing';
const HTTP_GET = 'HTTP GET AuthCode, SQLITE_SYNCHRONOUS=FULL';
// Our server's own WSDL, saved from the first of our servers to start, for node-soap to host.
const wsdlFile = path.join(dataRoot, 'AuthCodeSending.wsdl');
// The HTTP GET binding, with a different code on each request (1 to 16 letters or digits).
const getRequest = {
  method: 'GET',
  path: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456',
  setupRequest: (req) => ({
    ...req,
    path: `/AuthCodeSending.asmx/AuthCode?code=${Math.floor(Math.random() * 1e6)}&phone=%2B447911123456`,
  }),
};
// name, script, env, distinct phones, instances, database: 'postgres' for a fresh PostgreSQL one.
const targets = [
  { name: 'bare Fastify route', script: path.join(here, 'bare.mjs'), env: {} },
  { name: FULL, env: { DATA_DIR: path.join(dataRoot, 'full'), ...NO_LIMITS }, sampleRss: true },
  { name: NODE_SOAP, script: path.join(here, 'node-soap.mjs'), env: { WSDL_FILE: wsdlFile } },
  { name: HTTP_GET, env: { DATA_DIR: path.join(dataRoot, 'get'), ...NO_LIMITS }, request: getRequest },
  {
    name: 'SOAP AuthCode, SQLITE_SYNCHRONOUS=NORMAL',
    env: { DATA_DIR: path.join(dataRoot, 'normal'), SQLITE_SYNCHRONOUS: 'NORMAL', ...NO_LIMITS },
  },
  {
    name: 'SOAP AuthCode, FULL, per-phone limit checked',
    env: { DATA_DIR: path.join(dataRoot, 'limits'), ...PHONE_LIMIT_ONLY },
    distinctPhones: true,
  },
  { name: 'SOAP AuthCode, PostgreSQL, 1 instance', env: NO_LIMITS, database: 'postgres' },
  {
    name: 'SOAP AuthCode, PostgreSQL, 2 instances',
    env: NO_LIMITS,
    database: 'postgres',
    instances: 2,
  },
  {
    name: 'SOAP AuthCode, PostgreSQL, per-phone limit checked',
    env: PHONE_LIMIT_ONLY,
    database: 'postgres',
    distinctPhones: true,
  },
];

const request = (distinctPhones) =>
  distinctPhones
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

/**
 * The load split across the instances: one autocannon per instance, run at once, with the
 * connections shared out; throughputs add up, latencies are each instance's.
 */
async function measure(servers, req, duration) {
  const share = Math.max(1, Math.round(connections / servers.length));
  const each = await Promise.all(servers.map((s) => load(s.url, req, duration, share)));
  return {
    rps: each.reduce((sum, r) => sum + r.rps, 0),
    p50: each.map((r) => r.p50).join(' / '),
    p99: each.map((r) => r.p99).join(' / '),
  };
}

/** Samples a process's resident memory (VmRSS) every 100 ms until `stop()`, which answers the peak in MB. */
function sampleRss(pid) {
  const read = () => {
    try {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    } catch {
      return 0;
    }
  };
  let peak = read();
  const timer = setInterval(() => {
    peak = Math.max(peak, read());
  }, 100);
  return () => {
    clearInterval(timer);
    return Math.max(peak, read());
  };
}

/** Sent deliveries / queued ones, read as the load ends (before the server stops). */
async function smsSent(env) {
  const query =
    "SELECT count(*) AS queued, coalesce(sum(CASE WHEN status = 'sent' THEN 1 ELSE 0 END), 0) AS sent FROM deliveries";
  let counts;
  if (env.DATABASE_URL) {
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      counts = (await client.query(query)).rows[0];
    } finally {
      await client.end();
    }
  } else if (env.DATA_DIR) {
    const db = new SQLite(path.join(env.DATA_DIR, 'school-messaging.db'), { readonly: true });
    try {
      counts = db.prepare(query).get();
    } finally {
      db.close();
    }
  } else return undefined;
  return Number(counts.sent) / Number(counts.queued);
}

const stop = stopProcess;

const admin = await connectAdmin();
const skipped = admin.reason;
console.log(`autocannon: ${connections} connections, ${seconds} s per target, after a 2 s warm-up`);
if (skipped) console.log(`PostgreSQL rows skipped: ${skipped}`);
else console.log('PostgreSQL: a fresh database per row; 2 instances: the connections split between them');
console.log();
const rows = [];
try {
  for (const target of targets) {
    if (target.database === 'postgres' && skipped) continue;
    const database = target.database === 'postgres' ? await createDatabase(admin.client) : undefined;
    const servers = [];
    let last;
    try {
      for (let i = 0; i < (target.instances ?? 1); i++) {
        const env = database
          ? {
              ...target.env,
              DATABASE_URL: database.url,
              DATA_DIR: path.join(dataRoot, `${database.name}-${i}`),
            }
          : target.env;
        servers.push(await start(target.name, target.script ?? serverScript, env));
        last = env;
      }
      if (!target.script && !fs.existsSync(wsdlFile)) {
        const wsdl = await fetch(`${servers[0].url}/AuthCodeSending.asmx?WSDL`);
        if (!wsdl.ok) throw new Error(`?WSDL: ${wsdl.status}`);
        fs.writeFileSync(wsdlFile, await wsdl.text());
      }
      const req = target.request ?? request(target.distinctPhones);
      await measure(servers, req, 2);
      const rss = target.sampleRss ? sampleRss(servers[0].child.pid) : undefined;
      const measured = await measure(servers, req, seconds);
      rows.push({
        name: target.name,
        ...measured,
        sent: target.script ? undefined : await smsSent(last),
        rssPeak: rss?.(),
      });
    } finally {
      await Promise.all(servers.map((s) => stop(s.child)));
      await database?.drop();
    }
  }
} catch (err) {
  fs.rmSync(dataRoot, { recursive: true, force: true });
  throw err;
} finally {
  await admin.client?.end();
}

const base = rows[0];
const full = rows.find((r) => r.name === FULL);
console.log(
  'target'.padEnd(52),
  'req/s'.padStart(9),
  'p50 ms'.padStart(9),
  'p99 ms'.padStart(11),
  '  req/s vs bare',
  '  vs SQLite FULL',
  '  SMS sent',
);
for (const r of rows) {
  console.log(
    r.name.padEnd(52),
    r.rps.toFixed(0).padStart(9),
    String(r.p50).padStart(9),
    String(r.p99).padStart(11),
    `  ${(r.rps / base.rps).toFixed(2).padStart(13)}`,
    `  ${r === base ? ''.padStart(14) : (r.rps / full.rps).toFixed(2).padStart(14)}`,
    `  ${r.sent === undefined ? '' : `${(100 * r.sent).toFixed(0)} %`.padStart(8)}`,
  );
}

// The hot path's targets. The outbox, the half load and RSS run on a fresh SQLite FULL server of their
// own: BENCH_BACKLOG_SECONDS of SOAP AuthCode at full load, the backlog read 2 s later from its
// /metrics; then, once drained, three half loads of HALF_LOAD_SECONDS each at half the FULL row's
// req/s, with sequential probes (bench/probe.mjs) 2 s into each: SOAP AuthCode and /healthz from
// autocannon's overallRate, then SOAP AuthCode at an even pace (bench/paced.mjs). autocannon's
// overallRate sends each connection's quota for the second back to back as the second starts, so
// the server sees its full rate in bursts, then nothing: the p99 targets are judged on the probes
// during the even pace. Last, the same paced load and probes on the bare Fastify route: the
// machine's floor, what the probes would see of a server that did nothing.
const healthRequest = { method: 'GET', path: '/healthz' };
const PROBE = { count: 300, spacing: 3 };

/** Deliveries by status, from the server's own /metrics (it answers loopback). */
async function deliveries(url) {
  const res = await fetch(`${url}/metrics`);
  if (!res.ok) throw new Error(`/metrics: ${res.status}`);
  const text = await res.text();
  const count = (status) =>
    Number(
      new RegExp(`^school_deliveries\\{status="${status}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN,
    );
  const [pending, sending, sent, dead, expired] = ['pending', 'sending', 'sent', 'dead', 'expired'].map(
    count,
  );
  return { pending, sending, unsent: pending + sending, queued: pending + sending + sent + dead + expired };
}

/**
 * `rate` req/s of `req` for HALF_LOAD_SECONDS, from autocannon (overallRate, in this process) or
 * paced.mjs; 2 s into it the probes, one after the other. autocannon's coordinated-omission
 * correction is off: it takes the expected interval as ceil(1 / rate per connection) = 1 ms, so
 * every answer slower than 1 ms would add made-up samples.
 */
async function halfLoad(url, req, rate, generator, probes) {
  const started = performance.now();
  const loading =
    generator === 'paced'
      ? runScript('paced.mjs', url, req, { rate, seconds: HALF_LOAD_SECONDS, connections })
      : load(url, req, HALF_LOAD_SECONDS, connections, {
          overallRate: rate,
          ignoreCoordinatedOmission: true,
        });
  await sleep(2000);
  const probed = [];
  for (const p of probes)
    probed.push({
      what: p.path === '/healthz' ? '/healthz' : 'SOAP',
      ...(await runScript('probe.mjs', url, p, PROBE)),
    });
  const probesWithin = performance.now() - started <= HALF_LOAD_SECONDS * 1000;
  const loaded = await loading;
  if (loaded.failed) throw new Error(`paced load of ${req.path}: ${loaded.failed} failed`);
  return { ...loaded, generator, probes: probed, probesWithin };
}

let backlog;
let floodRss;
const half = Math.max(1, Math.round(full.rps / 2));
const halves = {};
try {
  const server = await start('targets', serverScript, {
    DATA_DIR: path.join(dataRoot, 'targets'),
    ...NO_LIMITS,
  });
  try {
    const rss = sampleRss(server.child.pid);
    await load(server.url, soapRequest, backlogSeconds);
    floodRss = rss();
    await sleep(2000);
    backlog = await deliveries(server.url);
    // What is left drains before the half loads, which then measure answering only.
    for (let i = 0; i < 100 && (await deliveries(server.url)).unsent > 0; i++) await sleep(200);
    const both = [soapRequest, healthRequest];
    halves.soap = await halfLoad(server.url, soapRequest, half, 'autocannon', both);
    halves.health = await halfLoad(server.url, healthRequest, half, 'autocannon', [healthRequest]);
    halves.paced = await halfLoad(server.url, soapRequest, half, 'paced', both);
  } finally {
    await stop(server.child);
  }
  // The machine's floor: the same paced load and probes on the bare Fastify route, which answers
  // the same bytes doing nothing. What the probes see there (the load generator and the probes
  // sharing the cores, the other processes on the machine) is not the server's doing.
  const bare = await start('bare Fastify route', path.join(here, 'bare.mjs'), {});
  try {
    halves.bare = await halfLoad(bare.url, soapRequest, half, 'paced', [soapRequest, healthRequest]);
  } finally {
    await stop(bare.child);
  }
} finally {
  fs.rmSync(dataRoot, { recursive: true, force: true });
}

const ms = (v) => `${v.toFixed(1)} ms`;
console.log();
console.log(
  `Half load: ${half} req/s (half the SQLite FULL row's ${full.rps.toFixed(0)}) for ${HALF_LOAD_SECONDS} s, at most ${connections} connections:`,
);
console.log(
  "  autocannon's overallRate (each second's requests in a burst at the second's start) or paced.mjs (evenly spaced).",
);
console.log(
  `Probe: one keep-alive connection, ${PROBE.count} requests ${PROBE.spacing} ms apart, timed with performance.now() in a process of its own, 2 s into the load, on top of it.`,
);
console.log(
  '  load'.padEnd(17),
  'generator'.padEnd(11),
  'served req/s'.padStart(12),
  'generator p50 / p99'.padStart(22),
  '  probed',
  'probe p50 / p99 / max'.padStart(27),
);
const halfRows = [
  ['SOAP AuthCode', halves.soap],
  ['/healthz', halves.health],
  ['SOAP AuthCode', halves.paced],
  ['bare Fastify', halves.bare],
];
for (const [loaded, run] of halfRows) {
  run.probes.forEach((p, i) => {
    console.log(
      `  ${i === 0 ? loaded : ''}`.padEnd(17),
      (i === 0 ? run.generator : '').padEnd(11),
      (i === 0 ? run.rps.toFixed(0) : '').padStart(12),
      (i === 0 ? `${ms(run.p50)} / ${ms(run.p99)}` : '').padStart(22),
      `  ${p.what}`.padEnd(10),
      `${ms(p.p50)} / ${ms(p.p99)} / ${ms(p.max)}`.padStart(26),
    );
  });
}
if (Object.values(halves).some((h) => !h.probesWithin))
  console.log('  (a probe outlasted its load: its last requests were not under the half load)');

const nodeSoap = rows.find((r) => r.name === NODE_SOAP);
const httpGet = rows.find((r) => r.name === HTTP_GET);
const rssPeak = Math.max(full.rssPeak, floodRss);
const [soapProbe, healthProbe] = halves.paced.probes;
const [bareSoapProbe, bareHealthProbe] = halves.bare.probes;
const targetLines = [
  [
    'SOAP AuthCode req/s vs node-soap',
    (full.rps / nodeSoap.rps).toFixed(2),
    '≥ 1.00',
    full.rps >= nodeSoap.rps,
    `${full.rps.toFixed(0)} vs ${nodeSoap.rps.toFixed(0)} req/s`,
  ],
  [
    'SOAP AuthCode req/s vs bare Fastify',
    (full.rps / base.rps).toFixed(2),
    '≥ 0.35',
    full.rps / base.rps >= 0.35,
    `${full.rps.toFixed(0)} vs ${base.rps.toFixed(0)} req/s`,
  ],
  [
    'HTTP GET AuthCode req/s vs bare Fastify',
    (httpGet.rps / base.rps).toFixed(2),
    '≥ 0.45',
    httpGet.rps / base.rps >= 0.45,
    `${httpGet.rps.toFixed(0)} vs ${base.rps.toFixed(0)} req/s`,
  ],
  [
    `deliveries not sent 2 s after ${backlogSeconds} s at full load`,
    String(backlog.unsent),
    '= 0',
    backlog.unsent === 0,
    `pending ${backlog.pending}, sending ${backlog.sending}, of ${backlog.queued} queued`,
  ],
  [
    'SOAP AuthCode p99 at half load',
    ms(soapProbe.p99),
    '≤ 10 ms',
    soapProbe.p99 <= 10,
    `probe, paced load; paced.mjs ${ms(halves.paced.p99)}; autocannon's load: probe ${ms(halves.soap.probes[0].p99)}, autocannon ${ms(halves.soap.p99)}; bare Fastify, same paced load: probe ${ms(bareSoapProbe.p99)}`,
  ],
  [
    '/healthz p99 at half load of SOAP AuthCode',
    ms(healthProbe.p99),
    '≤ 5 ms',
    healthProbe.p99 <= 5,
    `probe, paced load; autocannon's SOAP load: probe ${ms(halves.soap.probes[1].p99)}; /healthz itself at ${half} req/s: probe ${ms(halves.health.probes[0].p99)}, autocannon ${ms(halves.health.p99)}; bare Fastify, same paced load: probe ${ms(bareHealthProbe.p99)}`,
  ],
  [
    'peak RSS, SOAP AuthCode at full load',
    `${rssPeak.toFixed(0)} MB`,
    '≤ 250 MB',
    rssPeak <= 250,
    `VmRSS; FULL row ${full.rssPeak.toFixed(0)} MB, ${backlogSeconds} s run ${floodRss.toFixed(0)} MB`,
  ],
];
console.log();
console.log(
  'Targets (SQLite FULL, log providers, limits off; p99 from the probes during the paced half load)',
);
for (const [what, figure, target, ok, note] of targetLines) {
  console.log(
    `  ${what.padEnd(46)}`,
    figure.padStart(9),
    `  ${target.padEnd(9)}`,
    (ok ? 'met' : 'NOT met').padEnd(8),
    note,
  );
}
