// pnpm bench (history): the console API on 1 000 000 recorded calls.
//  - GET /api/calls first page under each filter: p95 latency against the 20 ms target;
//  - export of all calls as CSV and JSON: the server's peak RSS against the 150 MB target.
// Seeds a temporary SQLite database, starts the built server on it, measures, removes it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOTAL = Number(process.env.BENCH_CALLS ?? 1_000_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
// BENCH_DATA_DIR keeps the seeded database for a later look; by default it is a temporary folder.
const keep = process.env.BENCH_DATA_DIR;
const dataDir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'school-history-bench-'));

async function startServer() {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, ['--max-semi-space-size=8', path.join(here, '../dist/server.js')], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      ...BENCH_ADMIN,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { url, child, headers: { cookie: await login(url) } };
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('server did not start');
}

// The history API needs a staff session: the bench logs in as the admin it starts the server with.
const BENCH_ADMIN = { ADMIN_USERNAME: 'bench', ADMIN_PASSWORD: 'bench password 1' };
async function login(url) {
  const res = await fetch(`${url}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ username: BENCH_ADMIN.ADMIN_USERNAME, password: BENCH_ADMIN.ADMIN_PASSWORD }),
  });
  if (!res.ok) throw new Error(`login failed: ${res.status}`);
  return (res.headers.get('set-cookie') ?? '').split(';')[0];
}

const stop = async (child) => {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
};

function peakRssMb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}
function rssMb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

try {
  // 1. Let the server create the schema, then seed directly (fast, one transaction per 20 000 rows).
  let server = await startServer();
  await stop(server.child);
  const started = performance.now();
  const db = new SQLite(path.join(dataDir, 'school-messaging.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const insert = db.prepare(
    'INSERT INTO calls (at, group_name, operation, binding, caller_ip, user_agent, params, outcome, status, error, duration_ms, request, request_bytes, response, response_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const ops = [
    ['AuthCodeSending', 'AuthCode'],
    ['BookPdf', 'GetBookPdfByTerm'],
    ['NotificationNotes', 'SendNotificationType'],
    ['NotificationNotes', 'SendMarkNotes'],
    ['PushNotificationMobile', 'pushNoti'],
  ];
  const bindings = ['soap11', 'soap12', 'http-get', 'http-post', 'console'];
  const now = Date.now();
  const span = 90 * 24 * 3_600_000;
  const seed = db.transaction((from, to) => {
    for (let i = from; i < to; i++) {
      const [group, op] = ops[i % 5];
      const error = i % 17 === 0;
      const phone = `+4479111${String(i % 100000).padStart(5, '0')}`;
      insert.run(
        now - span + Math.floor((i / TOTAL) * span),
        group,
        op,
        bindings[(i * 7) % 5],
        `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
        'ksoap2-android/2.6.0+',
        JSON.stringify({ code: '***', phone }),
        error ? 'client-error' : 'ok',
        error ? 400 : 200,
        error ? 'Missing parameter: phone.' : null,
        1.2,
        `POST /${group}.asmx HTTP/1.1\r\nContent-Type: text/xml; charset=utf-8\r\n\r\n<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><${op} xmlns="http://tempuri.org/"><code>***</code><phone>${phone}</phone></${op}></soap:Body></soap:Envelope>`,
        300,
        `HTTP/1.1 200\r\nContent-Type: text/xml; charset=utf-8\r\n\r\n<soap:Envelope><soap:Body><${op}Response xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>`,
        200,
      );
    }
  });
  for (let i = 0; i < TOTAL; i += 20_000) seed(i, Math.min(TOTAL, i + 20_000));
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  console.log(
    `seeded ${TOTAL.toLocaleString('en')} calls in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );

  // 2. First pages under each filter.
  server = await startServer();
  const day = 24 * 3_600_000;
  const filters = {
    'no filter': '',
    'operation=AuthCode': 'operation=AuthCode',
    'binding=soap12': 'binding=soap12',
    'outcome=client-error': 'outcome=client-error',
    'ip (one caller)': 'ip=10.3.2.1',
    'from/to (one day)': `from=${new Date(now - 30 * day).toISOString()}&to=${new Date(now - 29 * day).toISOString()}`,
    'operation + outcome + day': `operation=SendMarkNotes&outcome=ok&from=${new Date(now - 30 * day).toISOString()}&to=${new Date(now - 29 * day).toISOString()}`,
    'q (free text, common)': 'q=4479111',
  };
  // Free text that matches nothing reads every row: reported apart, with few samples.
  const fullScans = { 'q (free text, no match: full scan)': 'q=no-such-text' };
  console.log(
    'GET /api/calls?limit=50&<filter>'.padEnd(44),
    'p50 ms'.padStart(8),
    'p95 ms'.padStart(8),
    '  p95 / 20 ms target',
  );
  // BENCH_ONLY=export skips the list timings (for working on the exports).
  const lists =
    process.env.BENCH_ONLY === 'export' ? [] : [...Object.entries(filters), ...Object.entries(fullScans)];
  for (const [name, query] of lists) {
    const times = [];
    const full = name in fullScans;
    const [warm, samples] = full ? [1, 5] : [10, SAMPLES];
    for (let i = 0; i < samples + warm; i++) {
      const t = performance.now();
      const res = await fetch(`${server.url}/api/calls?limit=50&${query}`, { headers: server.headers });
      const body = await res.json();
      if (!res.ok || (!full && body.items.length === 0))
        throw new Error(`${name}: ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
      if (i >= warm) times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    const p = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
    console.log(
      name.padEnd(44),
      p(0.5).toFixed(2).padStart(8),
      p(0.95).toFixed(2).padStart(8),
      `  ${(p(0.95) / 20).toFixed(2)}`,
    );
  }

  // 3. Exports of everything, read to the end as a client would, the server's peak RSS sampled.
  console.log();
  console.log(
    'export of all calls'.padEnd(44),
    'rows'.padStart(9),
    'MB out'.padStart(8),
    'seconds'.padStart(8),
    'peak RSS MB'.padStart(12),
    '  peak / 150 MB target',
  );
  for (const format of ['csv', 'json']) {
    await stop(server.child);
    server = await startServer();
    const before = rssMb(server.child.pid);
    const t = performance.now();
    const res = await fetch(`${server.url}/api/calls/export?format=${format}`, { headers: server.headers });
    let bytes = 0;
    let newlines = 0;
    for await (const chunk of res.body) {
      bytes += chunk.length;
      for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) newlines++;
    }
    const peak = peakRssMb(server.child.pid);
    const rows = format === 'csv' ? newlines - 1 : newlines - 1;
    console.log(
      `${format.toUpperCase()} (idle RSS ${before.toFixed(0)} MB)`.padEnd(44),
      String(rows).padStart(9),
      (bytes / 1e6).toFixed(0).padStart(8),
      ((performance.now() - t) / 1000).toFixed(1).padStart(8),
      peak.toFixed(0).padStart(12),
      `  ${(peak / 150).toFixed(2)}`,
    );
  }
  await stop(server.child);
} finally {
  if (!keep) fs.rmSync(dataDir, { recursive: true, force: true });
}
