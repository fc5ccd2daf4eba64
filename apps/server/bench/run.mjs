// pnpm bench: the .asmx hot path against a bare Fastify route, measured in one run on this
// machine, printed as ratios. Not a test: shared machines are noisy, so compare ratios, not times.
// The same on PostgreSQL (a fresh database per row, bench/pg.mjs): one instance, and two instances
// on one database with the load split across both. Without a reachable PostgreSQL server those
// rows are skipped, with a line saying why. "SMS sent": the share of the auth codes queued so far
// that the dispatcher had sent when the load ended (it sends alongside, through the log provider):
// below 100 % the queue grows while calls are accepted at that rate.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { connectAdmin, createDatabase } from './pg.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

const soapRequest = {
  method: 'POST',
  path: '/AuthCodeSending.asmx',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
  body: '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>',
};

/** A port nothing listens on now (a random one may be a client's ephemeral port under load). */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

async function start(name, script, env) {
  const port = await freePort();
  const child = spawn(process.execPath, ['--max-semi-space-size=8', script], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) break;
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { name, url, child };
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`${name} did not start`);
}

async function load(url, request, duration, share = connections) {
  const result = await autocannon({ url, connections: share, duration, requests: [request] });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'school-bench-'));
// One phone from one address: the abuse limits are off here (the rows marked "per-phone limit"
// measure that limit, with a different phone on every request).
const NO_LIMITS = { AUTHCODE_LIMIT_PER_PHONE: 'off', AUTHCODE_LIMIT_PER_IP: 'off', ASMX_LIMIT_PER_IP: 'off' };
const PHONE_LIMIT_ONLY = { AUTHCODE_LIMIT_PER_IP: 'off', ASMX_LIMIT_PER_IP: 'off' };
const serverScript = path.join(here, '../dist/server.js');
const FULL = 'SOAP AuthCode, SQLITE_SYNCHRONOUS=FULL';
// name, script, env, distinct phones, instances, database: 'postgres' for a fresh PostgreSQL one.
const targets = [
  { name: 'bare Fastify route', script: path.join(here, 'bare.mjs'), env: {} },
  { name: FULL, env: { DATA_DIR: path.join(dataRoot, 'full'), ...NO_LIMITS } },
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

const stop = async (child) => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
};

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
      const req = request(target.distinctPhones);
      await measure(servers, req, 2);
      const measured = await measure(servers, req, seconds);
      rows.push({ name: target.name, ...measured, sent: target.script ? undefined : await smsSent(last) });
    } finally {
      await Promise.all(servers.map((s) => stop(s.child)));
      await database?.drop();
    }
  }
} finally {
  await admin.client?.end();
  fs.rmSync(dataRoot, { recursive: true, force: true });
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
