import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { connectAdmin, createDatabase, keptDatabase } from './pg.mjs';
import { rolledUp } from './rollups.mjs';
import {
  BINDINGS,
  CALL_COLUMNS,
  DELIVERY_COLUMNS,
  ipOf,
  OPS,
  seedCallsPostgres,
  seedDeliveriesPostgres,
} from './seed-calls.mjs';
import { killAll, startProcess, stopAll, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOTAL = Number(process.env.BENCH_CALLS ?? 1_000_000);
const PG_TOTAL = Number(process.env.BENCH_PG_CALLS ?? TOTAL);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const TARGET_MS = 20;
const STATS_TARGET_MS = 200;
const STATS_SAMPLES = Number(process.env.BENCH_STATS_SAMPLES ?? 30);
// How long the no-match search is followed back ("Load more") before giving up.
const FOLLOW_SECONDS = Number(process.env.BENCH_FOLLOW_SECONDS ?? 30);
const TARGET_RSS_MB = 150;
// BENCH_DATA_DIR keeps the seeded SQLite database for a later look; by default it is a temporary folder.
const keep = process.env.BENCH_DATA_DIR;
// BENCH_PG_DATABASE: a PostgreSQL database of that name, used and kept (created if missing, seeded
// afresh only when it holds fewer calls than asked: seeding 2 M calls takes ~40 s, 10 M ~5 min).
const PG_DATABASE = process.env.BENCH_PG_DATABASE;
if (PG_DATABASE !== undefined && !/^[a-z_][a-z0-9_]*$/.test(PG_DATABASE))
  throw new Error(`BENCH_PG_DATABASE: ${PG_DATABASE} is not a plain lower-case name`);
// BENCH_ONLY: `dashboard` (the Dashboard alone) or `export` (the exports alone); all by default.
const ONLY = process.env.BENCH_ONLY;
// BENCH_SERVER: another build's dist/server.js measured in place of ours (its parent, say).
const SERVER = process.env.BENCH_SERVER ?? path.join(here, '../dist/server.js');
const dataDir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'school-history-bench-'));

// The history API needs a staff session: the bench logs in as the admin it starts the server with.
const BENCH_ADMIN = { ADMIN_USERNAME: 'bench', ADMIN_PASSWORD: 'bench password 1' };

/** Servers started and not yet stopped: killed if the bench fails half-way. */

/** Starts the built server on a store (`env`: DATA_DIR, and DATABASE_URL for PostgreSQL), logged in. */
async function startServer(env) {
  const { url, child } = await startProcess(SERVER, { ...BENCH_ADMIN, ...env });
  return { url, child, headers: { cookie: await login(url) } };
}

async function login(url) {
  const res = await fetch(`${url}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ username: BENCH_ADMIN.ADMIN_USERNAME, password: BENCH_ADMIN.ADMIN_PASSWORD }),
  });
  if (!res.ok) throw new Error(`login failed: ${res.status}`);
  return (res.headers.get('set-cookie') ?? '').split(';')[0];
}

const stop = stopProcess;

function procStatusMb(pid, field) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
}

/**
 * Resets the process's peak RSS (VmHWM) to its RSS now (Linux: 5 into /proc/<pid>/clear_refs);
 * false where that is not allowed: the peak then covers the whole life of the process.
 */
function resetPeak(pid) {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const SPAN = 90 * 24 * 3_600_000;
/** Each AuthCode call has its SMS; one in DEAD_EVERY of them went dead (History's "delivery failed"). */
const DEAD_EVERY = 500;

/** A cursor as the API gives them out (routes/api/call-mapping.ts): the bench knows its format to jump deep. */
const cursorOf = (row) => Buffer.from(`${row.at}.${row.id}`).toString('base64url');
/** Call i's id: both stores number a fresh table from 1, in insertion order (oldest first). */
const deepId = (total) => Math.floor(total / 10) + 1;

/** SQLite: straight into the file the server created, one transaction per 20 000 rows. */
function seedSqlite(file, total) {
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const insert = db.prepare(
    `INSERT INTO calls (${CALL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const now = Date.now();
  const seed = db.transaction((from, to) => {
    for (let i = from; i < to; i++) {
      const [group, op] = OPS[i % 5];
      const error = i % 17 === 0;
      const phone = `+4479111${String(i % 100000).padStart(5, '0')}`;
      insert.run(
        now - SPAN + Math.floor((i / total) * SPAN),
        group,
        op,
        BINDINGS[(i * 7) % 5],
        ipOf(i),
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
  for (let i = 0; i < total; i += 20_000) seed(i, Math.min(total, i + 20_000));
  // Each AuthCode call's SMS (calls are numbered from 1 in insertion order), one in DEAD_EVERY dead.
  db.prepare(
    `INSERT INTO deliveries (${DELIVERY_COLUMNS})
     SELECT id, 'sms', 'http', '+447911100000', '{}',
       CASE WHEN (id - 1) / 5 % ${DEAD_EVERY} = 0 THEN 'dead' ELSE 'sent' END,
       1, at, 'key-' || id, at, at
     FROM calls WHERE operation = 'AuthCode' ORDER BY id`,
  ).run();
  db.pragma('wal_checkpoint(TRUNCATE)');
  const deep = db.prepare('SELECT at, id FROM calls WHERE id = ?').get(deepId(total));
  db.close();
  return { now, deepCursor: cursorOf(deep) };
}

/**
 * PostgreSQL: the same rows as seedSqlite, made by the database itself (bench/seed-calls.mjs),
 * then VACUUM (ANALYZE): statistics for the planner and the visibility map that
 * autovacuum would have written on a server that has been up a while.
 */
async function seedPostgres(url, total) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const now = Date.now();
    await seedCallsPostgres(client, { total, from: now - SPAN, span: SPAN });
    // Each AuthCode call's SMS, one in DEAD_EVERY dead.
    await seedDeliveriesPostgres(client, { from: now - SPAN, to: now, deadEvery: DEAD_EVERY });
    await client.query('VACUUM (ANALYZE) calls');
    await client.query('VACUUM (ANALYZE) deliveries');
    const { rows } = await client.query('SELECT at, id FROM calls WHERE id = $1', [deepId(total)]);
    return { now, deepCursor: cursorOf(rows[0]) };
  } finally {
    await client.end();
  }
}

/**
 * BENCH_PG_DATABASE's database as seeded by an earlier run when it holds at least `total` calls:
 * how many, the newest call's time as "now" and the deep cursor; null when it needs seeding.
 */
async function seededAlready(url, total) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT to_regclass('calls') IS NOT NULL AS made`);
    if (!rows[0].made) return null;
    const [seeded] = (await client.query('SELECT count(*)::int AS n, max(at)::bigint AS now FROM calls'))
      .rows;
    if (seeded.n < total) return null;
    const deep = (await client.query('SELECT at, id FROM calls WHERE id = $1', [deepId(seeded.n)])).rows[0];
    if (!deep) return null;
    return { total: seeded.n, now: Number(seeded.now), deepCursor: cursorOf(deep) };
  } finally {
    await client.end();
  }
}

const percentile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** GET /api/calls `samples` times after `warm` unmeasured; answers p50, p95 and the last body. */
async function timeList(server, query, { warm, samples, mustFind }) {
  const times = [];
  let body;
  for (let i = 0; i < samples + warm; i++) {
    const t = performance.now();
    const res = await fetch(`${server.url}/api/calls?limit=50&${query}`, { headers: server.headers });
    body = await res.json();
    if (!res.ok || (mustFind && body.items.length === 0))
      throw new Error(`${query}: ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
    if (i >= warm) times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p95: percentile(times, 0.95), body };
}

const NO_MATCH = 'no-such-text';

/**
 * The Dashboard (GET /api/stats) for each period, once the server has rolled up the seeded
 * history (it does so in the background after start; how long that took is reported too).
 */
async function timeDashboard(server, env, now) {
  const rollupSeconds = await rolledUp(env);
  const periods = {
    '24 hours by hour': [1, 'hour'],
    '7 days by hour': [7, 'hour'],
    '30 days by hour': [30, 'hour'],
    '30 days by day': [30, 'day'],
    '90 days by day': [90, 'day'],
  };
  const times = new Map();
  for (const [name, [days, bucket]] of Object.entries(periods)) {
    const samples = [];
    for (let i = 0; i < STATS_SAMPLES + 2; i++) {
      // A "now" that moves, as the Dashboard's Refresh does: the edges are never whole hours.
      const to = now - i * 61_000;
      const query = `from=${new Date(to - days * 86_400_000).toISOString()}&to=${new Date(to).toISOString()}&bucket=${bucket}`;
      const t = performance.now();
      const res = await fetch(`${server.url}/api/stats?${query}`, { headers: server.headers });
      const body = await res.json();
      if (!res.ok || body.rows.length === 0) throw new Error(`stats ${query}: ${res.status}`);
      if (i >= 2) samples.push(performance.now() - t);
    }
    samples.sort((a, b) => a - b);
    times.set(name, { p50: percentile(samples, 0.5), p95: percentile(samples, 0.95) });
  }
  return { rollupSeconds, times };
}

/** Everything measured on one store: `env` starts the server on it; `seeded` from its seeding. */
async function measure(env, total, { now, deepCursor }) {
  const out = { lists: new Map(), budget: null, exports: new Map(), dashboard: null };
  let server;
  try {
    if (ONLY !== 'export') {
      server = await startServer(env);
      out.dashboard = await timeDashboard(server, env, now);
      if (ONLY === 'dashboard') return out;
      const day = 24 * 3_600_000;
      const oneDay = `from=${new Date(now - 30 * day).toISOString()}&to=${new Date(now - 29 * day).toISOString()}`;
      const filters = {
        'no filter': '',
        'operation=AuthCode': 'operation=AuthCode',
        'binding=soap12': 'binding=soap12',
        'outcome=client-error': 'outcome=client-error',
        'delivery=failed': 'delivery=failed',
        'delivery=failed + operation': 'delivery=failed&operation=AuthCode',
        'ip (one caller)': `ip=${ipOf(Math.min(197_121, Math.floor(total / 2)))}`,
        'from/to (one day)': oneDay,
        'operation + outcome + day': `operation=SendMarkNotes&outcome=ok&${oneDay}`,
        'deep keyset page (90 % back)': `cursor=${deepCursor}`,
        'operation=AuthCode, deep keyset page': `operation=AuthCode&cursor=${deepCursor}`,
        'q (free text, common): first page': 'q=4479111',
      };
      for (const [name, query] of Object.entries(filters))
        out.lists.set(name, await timeList(server, query, { warm: 10, samples: SAMPLES, mustFind: true }));

      // Free text that matches nothing examines every call: the first page stops at the budget
      // (few samples), then "Load more" is followed back to the oldest call.
      const first = await timeList(server, `q=${NO_MATCH}`, { warm: 1, samples: 5, mustFind: false });
      out.lists.set(`q (no match): first page, budget`, first);
      const started = performance.now();
      let cursor = null;
      let pages = 0;
      let scanned = 0;
      // Stopped after FOLLOW_SECONDS: a slow scan of the whole history would hold the bench up.
      do {
        const res = await fetch(
          `${server.url}/api/calls?limit=50&q=${NO_MATCH}${cursor ? `&cursor=${cursor}` : ''}`,
          { headers: server.headers },
        );
        const body = await res.json();
        if (!res.ok) throw new Error(`q=${NO_MATCH}: ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
        pages++;
        scanned += body.search.scanned;
        cursor = body.nextCursor;
      } while (cursor && performance.now() - started < FOLLOW_SECONDS * 1000);
      out.budget = {
        first: first.body.search,
        pages,
        scanned,
        seconds: (performance.now() - started) / 1000,
        reachedOldest: !cursor,
        total,
      };
    }

    // Exports of everything, read to the end as a client would, the server's peak RSS sampled.
    for (const format of ['csv', 'json']) {
      if (server) await stop(server.child);
      server = await startServer(env);
      const idle = procStatusMb(server.child.pid, 'VmRSS');
      // The peak is the export's: the high-water mark is reset after the login, whose scrypt
      // (N = 2^15, r = 8) takes 32 MiB for a tenth of a second and would otherwise be the peak.
      const reset = resetPeak(server.child.pid);
      const t = performance.now();
      const res = await fetch(`${server.url}/api/calls/export?format=${format}`, { headers: server.headers });
      if (!res.ok) throw new Error(`export ${format}: ${res.status} ${await res.text()}`);
      let bytes = 0;
      let newlines = 0;
      for await (const chunk of res.body) {
        bytes += chunk.length;
        for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) newlines++;
      }
      const seconds = (performance.now() - t) / 1000;
      // CSV: a header line, then a line per call; JSON: `[`, a line per call, `]`.
      const rows = format === 'csv' ? newlines - 1 : newlines - 2;
      out.exports.set(format, {
        idle,
        rows,
        mb: bytes / 1e6,
        seconds,
        peak: procStatusMb(server.child.pid, 'VmHWM'),
        reset,
      });
    }
  } finally {
    if (server) await stop(server.child);
  }
  return out;
}

const secondsSince = (t) => ((performance.now() - t) / 1000).toFixed(1);
const results = [];
try {
  // 1. SQLite: the server creates the schema, the bench seeds directly, then measures.
  const sqliteEnv = { DATA_DIR: dataDir };
  await stop((await startServer(sqliteEnv)).child);
  let t = performance.now();
  const sqliteSeeded = seedSqlite(path.join(dataDir, 'school-messaging.db'), TOTAL);
  console.log(`SQLite: seeded ${TOTAL.toLocaleString('en')} calls in ${secondsSince(t)} s`);
  results.push({ name: 'SQLite', ...(await measure(sqliteEnv, TOTAL, sqliteSeeded)) });

  // 2. PostgreSQL: the same, in a fresh database dropped at the end (or BENCH_PG_DATABASE's, kept).
  const admin = await connectAdmin();
  if (admin.reason) console.log(`PostgreSQL skipped: ${admin.reason}`);
  else {
    const database = PG_DATABASE
      ? await keptDatabase(admin.client, PG_DATABASE)
      : await createDatabase(admin.client);
    try {
      const pgEnv = { DATABASE_URL: database.url, DATA_DIR: path.join(dataDir, 'pg') };
      let pgSeeded = PG_DATABASE ? await seededAlready(database.url, PG_TOTAL) : null;
      if (pgSeeded)
        console.log(
          `PostgreSQL: kept database ${PG_DATABASE}, ${pgSeeded.total.toLocaleString('en')} calls already seeded`,
        );
      else {
        if (PG_DATABASE) await database.empty();
        await stop((await startServer(pgEnv)).child);
        t = performance.now();
        pgSeeded = { total: PG_TOTAL, ...(await seedPostgres(database.url, PG_TOTAL)) };
        console.log(
          `PostgreSQL: seeded ${PG_TOTAL.toLocaleString('en')} calls (INSERT … SELECT, then VACUUM ANALYZE) in ${secondsSince(t)} s`,
        );
      }
      results.push({ name: 'PostgreSQL', ...(await measure(pgEnv, pgSeeded.total, pgSeeded)) });
    } finally {
      await stopAll();
      await database.drop();
      await admin.client.end();
    }
  }
} finally {
  killAll();
  if (!keep) fs.rmSync(dataDir, { recursive: true, force: true });
}

// 3. Side by side: each database's p50 / p95 and p95 against the target, then PostgreSQL / SQLite.
const [lite, post] = results;
const num = (v, digits = 2) => (v === undefined ? '' : v.toFixed(digits));

if (ONLY !== 'export') printDashboardAndLists();

function printDashboardAndLists() {
  console.log();
  console.log(
    'Dashboard: GET /api/stats'.padEnd(40),
    results
      .map((r) => `${`${r.name} p50 / p95 ms`.padStart(28)}  ${`/ ${STATS_TARGET_MS} ms`.padStart(9)}`)
      .join(''),
  );
  for (const name of lite.dashboard.times.keys()) {
    const cells = results.map((r) => {
      const m = r.dashboard.times.get(name);
      return `${`${num(m?.p50, 1)} / ${num(m?.p95, 1)}`.padStart(28)}  ${num(m && m.p95 / STATS_TARGET_MS).padStart(9)}`;
    });
    console.log(name.padEnd(40), cells.join(''));
  }
  for (const r of results)
    console.log(
      `${r.name}: the seeded history rolled up in ${r.dashboard.rollupSeconds.toFixed(1)} s after start`,
    );
  if (ONLY === 'dashboard') process.exit(0);
  console.log();
  console.log(
    'GET /api/calls?limit=50&<filter>'.padEnd(40),
    results
      .map((r) => `${`${r.name} p50 / p95 ms`.padStart(28)}  ${`/ ${TARGET_MS} ms`.padStart(8)}`)
      .join(''),
    post ? '  p95 PG / SQLite' : '',
  );
  for (const name of lite.lists.keys()) {
    const cells = results.map((r) => {
      const m = r.lists.get(name);
      return `${`${num(m?.p50)} / ${num(m?.p95)}`.padStart(28)}  ${num(m && m.p95 / TARGET_MS).padStart(8)}`;
    });
    const ratio = post ? num(post.lists.get(name)?.p95 / lite.lists.get(name).p95) : '';
    console.log(name.padEnd(40), cells.join(''), ratio.padStart(17));
  }

  if (lite.budget) {
    console.log(
      `\nq=${NO_MATCH} (matches nothing: every call examined), SEARCH_BUDGET_MS ${process.env.SEARCH_BUDGET_MS ?? 2000}`,
    );
    for (const r of results) {
      const b = r.budget;
      const share = (100 * b.first.scanned) / b.total;
      console.log(
        `${r.name.padEnd(11)} first page: ${b.first.scanned.toLocaleString('en')} calls examined (${share.toFixed(0)} %), complete: ${b.first.complete}; ` +
          `followed back ${b.reachedOldest ? 'to the oldest call' : `for ${FOLLOW_SECONDS} s, ${((100 * b.scanned) / b.total).toFixed(0)} % of the calls`}: ` +
          `${b.pages} pages, ${b.seconds.toFixed(1)} s, ${Math.round(b.scanned / b.seconds).toLocaleString('en')} calls/s`,
      );
    }
    if (post)
      console.log(
        `PostgreSQL / SQLite free-text scan rate: ${num(post.budget.scanned / post.budget.seconds / (lite.budget.scanned / lite.budget.seconds))}`,
      );
  }
}

console.log();
console.log(
  'export of all calls'.padEnd(30),
  'rows'.padStart(9),
  'MB out'.padStart(7),
  'seconds'.padStart(8),
  'rows/s'.padStart(8),
  'idle RSS MB'.padStart(12),
  'peak RSS MB'.padStart(12),
  `  peak / ${TARGET_RSS_MB} MB`,
  post ? '  seconds PG / SQLite' : '',
);
for (const format of ['csv', 'json']) {
  for (const r of results) {
    const e = r.exports.get(format);
    const ratio = r === post ? num(e.seconds / lite.exports.get(format).seconds) : '';
    console.log(
      `${format.toUpperCase()}, ${r.name}`.padEnd(30),
      String(e.rows).padStart(9),
      e.mb.toFixed(0).padStart(7),
      e.seconds.toFixed(1).padStart(8),
      Math.round(e.rows / e.seconds)
        .toLocaleString('en')
        .padStart(8),
      e.idle.toFixed(0).padStart(12),
      e.peak.toFixed(0).padStart(12),
      `  ${(e.peak / TARGET_RSS_MB).toFixed(2).padStart(12)}`,
      ratio.padStart(21),
    );
  }
}
if (results.some((r) => [...r.exports.values()].some((e) => !e.reset)))
  console.log(
    'peak RSS since the server started (its high-water mark could not be reset): the login is in it',
  );
