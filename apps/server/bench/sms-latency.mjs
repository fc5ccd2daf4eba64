import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectAdmin, createDatabase } from './pg.mjs';
import { killAll, startProcess, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const RATE = Number(process.env.BENCH_RATE ?? 300);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const GATEWAY_MS = Number(process.env.BENCH_GATEWAY_MS ?? 100);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 5000);
// How long the SMS are waited for after the paced load, and how long a backlog is given to drain:
// short enough that a slow dispatcher keeps the whole bench within a few minutes.
const WAIT_SECONDS = Number(process.env.BENCH_WAIT_SECONDS ?? 60);
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? 20);
const QUEUE_CONNECTIONS = 64;
const TARGET_P99_MS = 300;
const TARGET_DRAIN_PER_S = 1000;
/** Codes a second while the primary fails (a school's logins, not a flood). */
const FAILOVER_RATE = Number(process.env.BENCH_FAILOVER_RATE ?? 50);
const TARGET_FAILOVER_REFUSING_P99_MS = 5000;
/** A parent waiting at a login screen while the primary hangs (docs/outbox.md#the-hedge). */
const TARGET_FAILOVER_HANGING_P99_MS = 4000;
const extraEnv = JSON.parse(process.env.BENCH_SMS_ENV ?? '{}');
/** `hang`: only the fallback while the primary hangs, with both provider timeouts (no latency, drain or PostgreSQL). */
const ONLY = process.env.BENCH_SMS_ONLY;
// A held answer is given anyway before the server's provider timeout (PROVIDER_TIMEOUT_MS, 10 s by
// default) would end the attempt and resend it: queueing the backlog may take longer than that.
const HOLD_MAX_MS = Math.max(500, 0.8 * Number(extraEnv.PROVIDER_TIMEOUT_MS ?? 10_000) - GATEWAY_MS);

const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- the fake SMS gateway --------------------------------------------------------------------

/**
 * A gateway that answers after GATEWAY_MS and, as a real one with idempotency keys does, sends a
 * key's message once. `hold()` keeps answers back until `release()`; arrivals are still recorded.
 */
async function startGateway() {
  /** Idempotency key → the first arrival under it. */
  const byKey = new Map();
  const gateway = {
    url: '',
    /** Every SMS (first arrival of each key), in order of arrival. */
    sms: [],
    /** Requests repeating a key already received. */
    resends: 0,
    /** Requests the gateway could not read (no key, to or text). */
    bad: 0,
    /** Answers held back, with their timers. */
    held: new Map(),
    holding: false,
    /** `refuse`: every request answered 503 and nothing sent; `hang`: never answered. */
    failing: undefined,
    /** Requests received, repeats and refusals included. */
    requests: 0,
    hold() {
      gateway.holding = true;
    },
    release() {
      gateway.holding = false;
      for (const [answer, timer] of gateway.held) {
        clearTimeout(timer);
        setTimeout(answer, GATEWAY_MS);
      }
      gateway.held.clear();
    },
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const at = now();
      gateway.requests++;
      if (gateway.failing === 'hang') return;
      if (gateway.failing === 'refuse') {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"unavailable"}');
        return;
      }
      const form = new URLSearchParams(body);
      const key = req.headers['idempotency-key'];
      const to = form.get('to');
      const text = form.get('text');
      if (typeof key !== 'string' || !to || !text) {
        gateway.bad++;
        res.writeHead(400).end('bad request');
        return;
      }
      let first = byKey.get(key);
      if (first) gateway.resends++;
      else {
        first = { at, key, to, text, id: `msg-${byKey.size + 1}` };
        byKey.set(key, first);
        gateway.sms.push(first);
      }
      const answer = () =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: first.id }));
      if (!gateway.holding) setTimeout(answer, GATEWAY_MS);
      else {
        // Held, but answered before the server's provider timeout would resend it.
        const timer = setTimeout(() => {
          gateway.held.delete(answer);
          answer();
        }, HOLD_MAX_MS);
        gateway.held.set(answer, timer);
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  gateway.url = `http://127.0.0.1:${server.address().port}/send`;
  gateway.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return gateway;
}

// --- the server ------------------------------------------------------------------------------

/** Settings of the delivery path left to their defaults: none is inherited from this shell. */
const DELIVERY_SETTING = /^(DISPATCH_|DELIVERY_|SMS_|PUSH_|PROVIDER_|TWILIO_|FCM_)/;

async function startServer(env) {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !DELIVERY_SETTING.test(name)),
  );
  return startProcess(
    path.join(here, '../dist/server.js'),
    {
      SQLITE_SYNCHRONOUS: 'FULL',
      AUTHCODE_LIMIT_PER_PHONE: 'off',
      AUTHCODE_LIMIT_PER_IP: 'off',
      AUTHCODE_LIMIT_PER_RANGE: 'off',
      ASMX_LIMIT_PER_IP: 'off',
      SMS_PROVIDER: 'http',
      SMS_HTTP_BODY: 'to={to}&text={text}',
      SMS_TEMPLATE: 'Code {code}',
      ...env,
      ...extraEnv,
    },
    { readyPath: '/readyz', baseEnv: inherited },
  );
}

const stopServer = stopProcess;

// --- the client ------------------------------------------------------------------------------

const envelope = (code, phone) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>${code}</code><phone>${phone}</phone></AuthCode></soap:Body></soap:Envelope>`;

// +447911…: a UK mobile range the phone check accepts throughout (many +447700… are refused).
const phoneFor = (i) => `+447911${String(i % 1e6).padStart(6, '0')}`;

/** One SOAP 1.1 AuthCode call; resolves with its status (0: no answer) and when the answer ended. */
function authCode(base, agent, code, phone) {
  const body = envelope(code, phone);
  return new Promise((resolve) => {
    const req = http.request(
      `${base}/AuthCodeSending.asmx`,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'text/xml; charset=utf-8',
          soapaction: '"http://tempuri.org/AuthCode"',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, at: now() }));
        res.on('error', () => resolve({ status: 0, at: now() }));
      },
    );
    req.on('error', () => resolve({ status: 0, at: now() }));
    req.end(body);
  });
}

const codeOf = (text) => /^Code (\S+)$/.exec(text)?.[1];

/** Calls by code, each with its phone, status and answer time, and the SMS the gateway got for each. */
function tally(calls, gateway) {
  const byCode = new Map();
  let mismatched = 0;
  let twice = 0;
  for (const sms of gateway.sms) {
    const code = codeOf(sms.text);
    const call = code === undefined ? undefined : calls.get(code);
    if (!call || call.phone !== sms.to) {
      mismatched++;
      continue;
    }
    if (byCode.has(code)) twice++;
    else byCode.set(code, sms);
  }
  return { byCode, mismatched, twice };
}

async function until(check, seconds) {
  const deadline = now() + seconds * 1000;
  while (!check() && now() < deadline) await sleep(20);
}

/** Nearest-rank percentile; a call whose SMS never came counts as slower than any that did. */
function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** RATE calls a second for SECONDS, on a steady 10 ms schedule; then waits for their SMS. */
async function measureLatency(env) {
  const gateway = await startGateway();
  const server = await startServer({ ...env, SMS_HTTP_URL: gateway.url });
  const agent = new http.Agent({ keepAlive: true, maxSockets: QUEUE_CONNECTIONS });
  try {
    const total = Math.round(RATE * SECONDS);
    const calls = new Map();
    const pending = [];
    let sent = 0;
    const start = now();
    await new Promise((resolve) => {
      const tick = () => {
        const due = Math.min(total, Math.floor((RATE * (now() - start)) / 1000));
        for (; sent < due; sent++) {
          const code = `L${String(sent).padStart(6, '0')}`;
          const call = { phone: phoneFor(sent), status: 0, sentAt: now(), answeredAt: 0 };
          calls.set(code, call);
          pending.push(
            authCode(server.url, agent, code, call.phone).then((r) => {
              call.status = r.status;
              call.answeredAt = r.at;
            }),
          );
        }
        if (sent >= total) {
          clearInterval(timer);
          resolve();
        }
      };
      const timer = setInterval(tick, 10);
      tick();
    });
    await Promise.all(pending);
    const loadSeconds = (now() - start) / 1000;
    const answered = [...calls].filter(([, c]) => c.status === 200);
    await until(() => tally(calls, gateway).byCode.size >= answered.length, WAIT_SECONDS);
    const { byCode, mismatched, twice } = tally(calls, gateway);
    const delays = answered
      .map(([code, c]) => (byCode.has(code) ? byCode.get(code).at - c.answeredAt : Number.POSITIVE_INFINITY))
      .sort((a, b) => a - b);
    const missing = answered.filter(([code]) => !byCode.has(code)).length;
    const answerTimes = answered.map(([, c]) => c.answeredAt - c.sentAt).sort((a, b) => a - b);
    return {
      total,
      loadSeconds,
      answered: answered.length,
      received: byCode.size,
      missing,
      resends: gateway.resends,
      twice,
      mismatched: mismatched + gateway.bad,
      p50: percentile(delays, 50),
      p95: percentile(delays, 95),
      p99: percentile(delays, 99),
      max: delays.at(-1) ?? Number.NaN,
      answerP50: percentile(answerTimes, 50),
      answerP99: percentile(answerTimes, 99),
    };
  } finally {
    agent.destroy();
    await stopServer(server.child);
    await gateway.close();
  }
}

/**
 * A backlog of BACKLOG auth codes queued while the gateway holds its answers; then released, the
 * rate at which the rest reaches the gateway, from the first to the last arrival after release.
 */
async function measureDrain(env) {
  const gateway = await startGateway();
  const server = await startServer({ ...env, SMS_HTTP_URL: gateway.url });
  const agent = new http.Agent({ keepAlive: true, maxSockets: QUEUE_CONNECTIONS });
  try {
    gateway.hold();
    const calls = new Map();
    let next = 0;
    const queueStart = now();
    await Promise.all(
      Array.from({ length: QUEUE_CONNECTIONS }, async () => {
        while (next < BACKLOG) {
          const i = next++;
          const code = `D${String(i).padStart(6, '0')}`;
          const call = { phone: phoneFor(i), status: 0 };
          calls.set(code, call);
          call.status = (await authCode(server.url, agent, code, call.phone)).status;
        }
      }),
    );
    const queuedPerS = BACKLOG / ((now() - queueStart) / 1000);
    const queued = [...calls.values()].filter((c) => c.status === 200).length;
    // Let the attempts the dispatcher had started reach the gateway before it answers again.
    await sleep(300);
    const releasedAt = now();
    const before = gateway.sms.length;
    gateway.release();
    await until(() => tally(calls, gateway).byCode.size >= queued, DRAIN_SECONDS);
    const after = gateway.sms.slice(before).filter((s) => s.at >= releasedAt);
    const { byCode, twice, mismatched } = tally(calls, gateway);
    const span = after.length > 1 ? (after.at(-1).at - after[0].at) / 1000 : 0;
    return {
      queued,
      queuedPerS,
      held: before,
      drained: byCode.size,
      rate: span > 0 ? (after.length - 1) / span : Number.NaN,
      span,
      resends: gateway.resends,
      twice,
      mismatched: mismatched + gateway.bad,
    };
  } finally {
    agent.destroy();
    await stopServer(server.child);
    await gateway.close();
  }
}

/**
 * A fallback SMS provider taking over: the primary gateway `refuse`s every request (503) or
 * `hang`s (never answers; PROVIDER_TIMEOUT_MS `timeoutMs`), FAILOVER_RATE calls a second for
 * SECONDS; how long from each answer to the fallback's first arrival of its code. Then the primary
 * works again: after its circuit's cool-down, codes go back to it.
 */
async function measureFailover(env, failing, timeoutMs = 2000) {
  const primary = await startGateway();
  const fallback = await startGateway();
  primary.failing = failing;
  const server = await startServer({
    ...env,
    SMS_HTTP_URL: primary.url,
    SMS_FALLBACK_PROVIDER: 'http',
    SMS_FALLBACK_HTTP_URL: fallback.url,
    SMS_FALLBACK_HTTP_BODY: 'to={to}&text={text}',
    PROVIDER_TIMEOUT_MS: String(timeoutMs),
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: QUEUE_CONNECTIONS });
  const paced = async (prefix, first, count, rate) => {
    const calls = new Map();
    const pending = [];
    const start = now();
    for (let i = 0; i < count; i++) {
      const wait = start + (i * 1000) / rate - now();
      if (wait > 0) await sleep(wait);
      const code = `${prefix}${String(i).padStart(6, '0')}`;
      const call = { phone: phoneFor(first + i), status: 0, answeredAt: 0 };
      calls.set(code, call);
      pending.push(
        authCode(server.url, agent, code, call.phone).then((r) => {
          call.status = r.status;
          call.answeredAt = r.at;
        }),
      );
    }
    await Promise.all(pending);
    return calls;
  };
  try {
    const calls = await paced(
      failing === 'refuse' ? 'R' : 'H',
      100_000,
      FAILOVER_RATE * SECONDS,
      FAILOVER_RATE,
    );
    const answered = [...calls].filter(([, c]) => c.status === 200);
    await until(() => tally(calls, fallback).byCode.size >= answered.length, WAIT_SECONDS);
    const { byCode, twice, mismatched } = tally(calls, fallback);
    const delays = answered
      .map(([code, c]) => (byCode.has(code) ? byCode.get(code).at - c.answeredAt : Number.POSITIVE_INFINITY))
      .sort((a, b) => a - b);
    const failingRequests = primary.requests;
    // The primary works again; its circuit (opened once its hung attempts timed out) is probed
    // after the cool-down (15 s) and closes.
    primary.failing = undefined;
    await sleep(timeoutMs + 14_000);
    const probeCalls = await paced('P', 200_000, 20, 10);
    await until(
      () => tally(probeCalls, primary).byCode.size + tally(probeCalls, fallback).byCode.size >= 20,
      20,
    );
    const lastCalls = await paced('B', 250_000, 20, 10);
    await until(
      () => tally(lastCalls, primary).byCode.size + tally(lastCalls, fallback).byCode.size >= 20,
      20,
    );
    return {
      answered: answered.length,
      total: calls.size,
      received: byCode.size,
      missing: answered.filter(([code]) => !byCode.has(code)).length,
      resends: fallback.resends,
      twice,
      mismatched: mismatched + fallback.bad,
      primaryRequests: failingRequests,
      p50: percentile(delays, 50),
      p99: percentile(delays, 99),
      max: delays.at(-1) ?? Number.NaN,
      backToPrimary: tally(lastCalls, primary).byCode.size,
    };
  } finally {
    agent.destroy();
    await stopServer(server.child);
    await primary.close();
    await fallback.close();
  }
}

// --- the run ---------------------------------------------------------------------------------

const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'school-sms-bench-'));
const results = [];
const failover = {};
const admin = await connectAdmin();
console.log(
  `SMS latency: ${RATE} SOAP 1.1 AuthCode calls/s for ${SECONDS} s, fake gateway answering in ${GATEWAY_MS} ms; ` +
    `drain: a backlog of ${BACKLOG} queued (${QUEUE_CONNECTIONS} at once) while the gateway holds, then released`,
);
if (Object.keys(extraEnv).length > 0) console.log(`server env (BENCH_SMS_ENV): ${JSON.stringify(extraEnv)}`);
else console.log('server env: dispatch settings at their defaults');
if (admin.reason) console.log(`PostgreSQL skipped: ${admin.reason}`);
// The targets are absolute times, so how busy the machine was belongs with them.
const load = () => os.loadavg()[0].toFixed(1);
console.log(`machine: ${os.availableParallelism()} CPUs, load average ${load()} at the start`);
console.log();
try {
  if (ONLY !== 'hang') {
    results.push({
      name: 'SQLite FULL',
      latency: await measureLatency({ DATA_DIR: path.join(dataRoot, 'latency') }),
      drain: await measureDrain({ DATA_DIR: path.join(dataRoot, 'drain') }),
    });
    failover.refusing = await measureFailover({ DATA_DIR: path.join(dataRoot, 'refusing') }, 'refuse');
  }
  failover.hanging = await measureFailover({ DATA_DIR: path.join(dataRoot, 'hanging') }, 'hang');
  failover.hangingLong = await measureFailover(
    { DATA_DIR: path.join(dataRoot, 'hanging-10s') },
    'hang',
    10_000,
  );
  if (!admin.reason && ONLY !== 'hang') {
    const store = async (measure) => {
      const database = await createDatabase(admin.client);
      try {
        return await measure({ DATABASE_URL: database.url, DATA_DIR: path.join(dataRoot, database.name) });
      } finally {
        await database.drop();
      }
    };
    results.push({
      name: 'PostgreSQL',
      latency: await store(measureLatency),
      drain: await store(measureDrain),
    });
  }
} finally {
  killAll();
  await admin.client?.end();
  fs.rmSync(dataRoot, { recursive: true, force: true });
}

const ms = (v) => (Number.isFinite(v) ? v.toFixed(0) : Number.isNaN(v) ? '–' : `>${WAIT_SECONDS * 1000}`);
const met = (ok) => (ok ? 'met' : 'NOT met');
const rows = [
  ['calls answered 200', (r) => `${r.latency.answered} of ${r.latency.total}`],
  ['load sent and answered in (s)', (r) => r.latency.loadSeconds.toFixed(1)],
  ['AuthCode answer p50 / p99 (ms)', (r) => `${ms(r.latency.answerP50)} / ${ms(r.latency.answerP99)}`],
  ['SMS received (one per code)', (r) => String(r.latency.received)],
  [`never arrived (within ${WAIT_SECONDS} s)`, (r) => String(r.latency.missing)],
  ['resends (same Idempotency-Key)', (r) => String(r.latency.resends)],
  ['codes sent under two keys', (r) => String(r.latency.twice)],
  ['SMS matching no call', (r) => String(r.latency.mismatched)],
  ['answer → gateway p50 (ms)', (r) => ms(r.latency.p50)],
  ['answer → gateway p95 (ms)', (r) => ms(r.latency.p95)],
  ['answer → gateway p99 (ms)', (r) => ms(r.latency.p99)],
  ['answer → gateway max (ms)', (r) => ms(r.latency.max)],
  [
    `target p99 ≤ ${TARGET_P99_MS} ms, once each`,
    (r) =>
      met(
        r.latency.p99 <= TARGET_P99_MS &&
          r.latency.answered === r.latency.total &&
          r.latency.missing === 0 &&
          r.latency.twice === 0 &&
          r.latency.mismatched === 0,
      ),
  ],
  ['drain: backlog queued (200)', (r) => `${r.drain.queued} of ${BACKLOG}`],
  ['drain: queued at (calls/s)', (r) => r.drain.queuedPerS.toFixed(0)],
  ['drain: reached the gateway while held', (r) => String(r.drain.held)],
  [`drain: SMS received (within ${DRAIN_SECONDS} s)`, (r) => String(r.drain.drained)],
  ['drain: resends / codes under two keys', (r) => `${r.drain.resends} / ${r.drain.twice}`],
  ['drain: first → last arrival (s)', (r) => r.drain.span.toFixed(2)],
  ['drain rate (SMS/s)', (r) => (Number.isFinite(r.drain.rate) ? r.drain.rate.toFixed(0) : '–')],
  [`target ≥ ${TARGET_DRAIN_PER_S} SMS/s`, (r) => met(r.drain.rate >= TARGET_DRAIN_PER_S)],
];
if (results.length > 0) {
  console.log(''.padEnd(40), ...results.map((r) => r.name.padStart(16)));
  for (const [label, value] of rows)
    console.log(label.padEnd(40), ...results.map((r) => value(r).padStart(16)));
}
console.log(`load average ${load()} at the end`);

console.log();
console.log(
  `Fallback SMS provider (SQLite FULL): ${FAILOVER_RATE} codes/s for ${SECONDS} s while the primary fails; then it works again`,
);
const failoverRows = [
  ['calls answered 200', (f) => `${f.answered} of ${f.total}`],
  ['codes at the fallback (one each)', (f) => String(f.received)],
  [`never arrived (within ${WAIT_SECONDS} s)`, (f) => String(f.missing)],
  ['resends to the fallback / under two keys', (f) => `${f.resends} / ${f.twice}`],
  ['requests to the failing primary', (f) => String(f.primaryRequests)],
  ['answer → fallback p50 (ms)', (f) => ms(f.p50)],
  ['answer → fallback p99 (ms)', (f) => ms(f.p99)],
  ['answer → fallback max (ms)', (f) => ms(f.max)],
  ['after recovery: of 20 new codes, to the primary', (f) => String(f.backToPrimary)],
];
const columns = [
  ['primary refusing', failover.refusing, TARGET_FAILOVER_REFUSING_P99_MS],
  ['hanging, 2 s timeout', failover.hanging, TARGET_FAILOVER_HANGING_P99_MS],
  ['hanging, 10 s timeout', failover.hangingLong, TARGET_FAILOVER_HANGING_P99_MS],
].filter(([, f]) => f !== undefined);
console.log(''.padEnd(48), ...columns.map(([name]) => name.padStart(18)));
for (const [label, value] of failoverRows)
  console.log(label.padEnd(48), ...columns.map(([, f]) => value(f).padStart(18)));
console.log(
  'target p99, each once, back to the primary'.padEnd(48),
  ...columns.map(([, f, target]) =>
    met(f.p99 <= target && f.missing === 0 && f.twice === 0 && f.resends === 0 && f.backToPrimary === 20)
      .concat(` (≤ ${target / 1000} s)`)
      .padStart(18),
  ),
);
