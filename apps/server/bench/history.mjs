import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { databaseCpu } from './db-cpu.mjs';
import { explainHistory } from './history-plans.mjs';
import { connectAdmin, createDatabase, keptDatabase, shownAdminUrl } from './pg.mjs';
import { startClusters } from './pg-clusters.mjs';
import { rolledUp } from './rollups.mjs';
import {
  BINDINGS,
  CALL_COLUMNS,
  DELIVERY_COLUMNS,
  ipOf,
  OPS,
  schoolOf,
  seedCallsPostgres,
  seedDeliveriesPostgres,
} from './seed-calls.mjs';
import { killAll, startProcess, stopAll, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOTAL = Number(process.env.BENCH_CALLS ?? 1_000_000);
// BENCH_CALLS=0 or BENCH_SQLITE=0: no SQLite part (PostgreSQL alone, BENCH_PG_CALLS of it: 1 M by default).
const SQLITE = TOTAL > 0 && process.env.BENCH_SQLITE !== '0';
const PG_TOTAL = Number(process.env.BENCH_PG_CALLS ?? (TOTAL || 1_000_000));
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
// Requests before each list's samples, not measured.
const WARM = Number(process.env.BENCH_WARM ?? 10);
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
// BENCH_REPLICA=1: PostgreSQL on a primary and a streaming replica of the bench's own (pg-clusters.mjs)
// in place of the shared server, measured twice: reads on the primary, then on the replica
// (DATABASE_READ_URL). BENCH_PG_DIR keeps both clusters, seeded, between runs (~1 GB a million
// calls each); by default they are in a temporary folder removed at the end.
const REPLICA = process.env.BENCH_REPLICA === '1';
const PG_DIR = process.env.BENCH_PG_DIR;
// BENCH_PARTITION_PERIOD: the partitions seeded into, and the server's PARTITION_PERIOD (`day`:
// the setting for a country's traffic, docs/deployment.md#partitions; or `month`).
const PERIOD = process.env.BENCH_PARTITION_PERIOD ?? 'day';
if (!['day', 'month'].includes(PERIOD))
  throw new Error(`BENCH_PARTITION_PERIOD: ${PERIOD} is not day or month`);
// BENCH_PLANS: a file to write EXPLAIN (ANALYZE, BUFFERS) of History's SQL into (history-plans.mjs),
// run on the seeded PostgreSQL database (the primary) before the measurements.
const PLANS = process.env.BENCH_PLANS;
// BENCH_IDLE_SECONDS: how long the database's CPU is measured with the server idle (PostgreSQL).
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 20);
// Calls seeded per INSERT … SELECT on PostgreSQL (a transaction each).
const PG_CHUNK = Number(process.env.BENCH_PG_CHUNK ?? 1_000_000);
// BENCH_ONLY: `dashboard` (the Dashboard alone), `lists` (the Dashboard and the lists, no export) or
// `export` (the exports alone); all by default.
const ONLY = process.env.BENCH_ONLY;
// BENCH_SCHOOLS: the schools the seeded calls belong to, in turn (call i: school i % n + 1; 0: none),
// and History, the Dashboard and Deliveries measured again as a user limited to one of them and to
// two (docs/performance.md#staff-scoped-to-schools). 20 by default.
const SCHOOLS = Number(process.env.BENCH_SCHOOLS ?? 20);
// BENCH_FILTERS: a regular expression of the lists' names (History's filters, as a user limited to
// schools: `1 school: …`, and the Deliveries page's: `deliveries: …`): only those are measured, no
// Dashboard, search budget or export (what an index serves, measured with and without it).
const FILTERS = process.env.BENCH_FILTERS ? new RegExp(process.env.BENCH_FILTERS) : null;
// BENCH_WITHOUT: indexes (comma-separated) the planner may not use while measuring: dropped on SQLite
// and built again after; on PostgreSQL marked not valid (pg_index.indisvalid, on the partitioned
// index and each partition's), which the planner skips, and marked valid again after (writes keep
// them up to date meanwhile; the bench's own database only).
const WITHOUT = (process.env.BENCH_WITHOUT ?? '').split(',').filter(Boolean);
// BENCH_SERVER: another build's dist/server.js measured in place of ours (its parent, say).
const SERVER = process.env.BENCH_SERVER ?? path.join(here, '../dist/server.js');
const dataDir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'school-history-bench-'));

// The history API needs a staff session: the bench logs in as the admin it starts the server with.
// An export under way ends with its session, which goes idle after SESSION_IDLE_TIMEOUT (30 min by
// default) however long the export has been streaming: exporting tens of millions of calls from a
// cold cache takes longer, so the bench's sessions last 12 hours.
const BENCH_ADMIN = {
  ADMIN_USERNAME: 'bench',
  ADMIN_PASSWORD: 'bench password 1',
  SESSION_IDLE_TIMEOUT: '12h',
};

/** Servers started and not yet stopped: killed if the bench fails half-way. */

/** Starts the built server on a store (`env`: DATA_DIR, and DATABASE_URL for PostgreSQL), logged in. */
async function startServer(env) {
  const { url, child } = await startProcess(SERVER, { ...BENCH_ADMIN, ...env });
  await databaseReady(url);
  if (env.DATABASE_READ_URL) await replicaInUse(url);
  return { url, child, headers: { cookie: await login(url) } };
}

/**
 * Waits until /readyz says ready: a server listens while it migrates a kept database (an index
 * over 20 million calls takes minutes), 30 minutes at most.
 */
async function databaseReady(url) {
  for (let i = 0; i < 18_000; i++) {
    if ((await fetch(`${url}/readyz`)).ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the server was not ready within 30 minutes');
}

/** Waits until the server reads from its replica (/readyz says `replica.state` ok), 60 s at most. */
async function replicaInUse(url) {
  let body;
  for (let i = 0; i < 600; i++) {
    body = await (await fetch(`${url}/readyz`)).json();
    if (body.replica?.state === 'ok') return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the server does not read from the replica: ${JSON.stringify(body.replica)}`);
}

async function login(url, username = BENCH_ADMIN.ADMIN_USERNAME, password = BENCH_ADMIN.ADMIN_PASSWORD) {
  const res = await fetch(`${url}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ username, password }),
  });
  if (!res.ok) throw new Error(`login failed: ${res.status}`);
  return (res.headers.get('set-cookie') ?? '').split(';')[0];
}

/**
 * The server as a user limited to `schoolIds` sees it: the user made by the admin (once: a kept
 * database has it already), then logged in.
 */
async function asScopedUser(server, username, schoolIds) {
  const password = 'bench scoped password';
  const res = await fetch(`${server.url}/api/users`, {
    method: 'POST',
    headers: {
      ...server.headers,
      'content-type': 'application/json',
      origin: server.url,
      'x-requested-with': 'school-console',
    },
    body: JSON.stringify({ username, displayName: username, password, role: 'operator', schoolIds }),
  });
  if (!res.ok && res.status !== 409) throw new Error(`making ${username}: ${res.status} ${await res.text()}`);
  return {
    url: server.url,
    child: server.child,
    headers: { cookie: await login(server.url, username, password) },
  };
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

/** The schools of the seeded calls, 1 … SCHOOLS (one school's staff are measured). */
const schoolRows = () =>
  Array.from({ length: SCHOOLS }, (_, k) => [
    `Bench school ${k + 1}`,
    `https://school-${k + 1}.bench.example`,
    `bench${k + 1}`,
  ]);
const SCHOOL_INSERT =
  'INSERT INTO schools (id, name, base_url, topic_key, allowed_ips, created_at, updated_at) VALUES ';

function seedSchoolsSqlite(db) {
  const insert = db.prepare(`${SCHOOL_INSERT} (?, ?, ?, ?, NULL, 0, 0)`);
  for (const [k, row] of schoolRows().entries()) insert.run(k + 1, ...row);
}

async function seedSchoolsPostgres(client) {
  for (const [k, row] of schoolRows().entries())
    await client.query(`${SCHOOL_INSERT} ($1, $2, $3, $4, NULL, 0, 0)`, [k + 1, ...row]);
  if (SCHOOLS > 0) await client.query(`SELECT setval(pg_get_serial_sequence('schools', 'id'), ${SCHOOLS})`);
}

/** SQLite: straight into the file the server created, one transaction per 20 000 rows. */
function seedSqlite(file, total) {
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const insert = db.prepare(
    `INSERT INTO calls (${CALL_COLUMNS}, school_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  seedSchoolsSqlite(db);
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
        // The phone column is AuthCode's (recording/record.ts).
        op === 'AuthCode' ? phone : null,
        schoolOf(i, SCHOOLS),
      );
    }
  });
  for (let i = 0; i < total; i += 20_000) seed(i, Math.min(total, i + 20_000));
  // Each AuthCode call's SMS (calls are numbered from 1 in insertion order), one in DEAD_EVERY dead.
  db.prepare(
    `INSERT INTO deliveries (${DELIVERY_COLUMNS}, school_id)
     SELECT id, 'sms', 'http', '+447911100000', '{}',
       CASE WHEN (id - 1) / 5 % ${DEAD_EVERY} = 0 THEN 'dead' ELSE 'sent' END,
       1, at, 'key-' || id, at, at, school_id
     FROM calls WHERE operation = 'AuthCode' ORDER BY id`,
  ).run();
  db.pragma('wal_checkpoint(TRUNCATE)');
  const deep = db.prepare('SELECT at, id FROM calls WHERE id = ?').get(deepId(total));
  db.close();
  return { now, deepCursor: cursorOf(deep) };
}

/**
 * BENCH_DATA_DIR's database as an earlier run seeded it, when it holds `total` calls (and no
 * more): the newest call's time as "now", and the deep cursor; null when it must be seeded.
 */
function sqliteSeededAlready(file, total) {
  const db = new SQLite(file);
  try {
    const { n, now } = db.prepare('SELECT count(*) AS n, max(at) AS now FROM calls').get();
    if (n !== total) return null;
    const deep = db.prepare('SELECT at, id FROM calls WHERE id = ?').get(deepId(total));
    return deep ? { now, deepCursor: cursorOf(deep) } : null;
  } finally {
    db.close();
  }
}

const DAY = 86_400_000;
/** The start of the period holding `t` (UTC), as store/partitions.ts has it. */
function periodStart(t) {
  if (PERIOD === 'day') return Math.floor(t / DAY) * DAY;
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
/** The start of the period after the one holding `t`. */
function periodEnd(t) {
  if (PERIOD === 'day') return periodStart(t) + DAY;
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
const PARTITIONED = ['calls', 'deliveries', 'delivery_attempts'];
/** `calls_p20261127`, as store/partitions.ts names them. */
const partitionName = (table, from) =>
  `${table}_p${new Date(from).toISOString().slice(0, 10).replaceAll('-', '')}`;

/**
 * The partitions of the periods from `from` to `to` that are not there yet, in each partitioned
 * table: the server's job makes them from the current period on only, and a seeded row of a
 * period with none would land in the default partition. Answers how many were made.
 */
async function makePartitions(client, from, to) {
  let made = 0;
  for (let start = periodStart(from); start < to; start = periodEnd(start)) {
    for (const table of PARTITIONED) {
      const name = partitionName(table, start);
      const { rows } = await client.query('SELECT to_regclass($1) IS NOT NULL AS there', [name]);
      if (rows[0].there) continue;
      await client.query(
        `CREATE TABLE ${name} PARTITION OF ${table} FOR VALUES FROM (${start}) TO (${periodEnd(start)})`,
      );
      made++;
    }
  }
  return made;
}

/** Rows in each table's default partition: none when every seeded period had its partition. */
async function defaultRows(client) {
  const counts = {};
  for (const table of PARTITIONED)
    counts[table] = Number(
      (await client.query(`SELECT count(*)::text AS n FROM ${table}_default`)).rows[0].n,
    );
  console.log(
    `PostgreSQL: rows in the default partitions (must be 0): ${PARTITIONED.map((t) => `${t}_default ${counts[t]}`).join(', ')}`,
  );
  if (Object.values(counts).some((n) => n > 0))
    throw new Error('seeded rows went to a default partition: a period had no partition');
}

/**
 * PostgreSQL: the same rows as seedSqlite, made by the database itself with INSERT … SELECT over
 * generate_series, PG_CHUNK calls (and their deliveries) a statement, into partitions made first
 * for the 90 days; then VACUUM (ANALYZE): statistics for the planner and the visibility map that
 * autovacuum would have written on a server that has been up a while.
 */
async function seedPostgres(url, total) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const now = Date.now();
    const made = await makePartitions(client, now - SPAN, now);
    console.log(`PostgreSQL: ${made} partitions made (a ${PERIOD} each) for the 90 days seeded`);
    await seedSchoolsPostgres(client);
    const started = performance.now();
    for (let first = 0; first < total; first += PG_CHUNK) {
      const count = Math.min(PG_CHUNK, total - first);
      await seedCallsPostgres(client, {
        total,
        from: now - SPAN,
        span: SPAN,
        first,
        count,
        schools: SCHOOLS,
      });
      // The chunk's AuthCode calls' SMS, one in DEAD_EVERY dead: the calls of its time span.
      const timeOf = (i) => now - SPAN + Math.floor((i / total) * SPAN);
      await seedDeliveriesPostgres(client, {
        from: timeOf(first),
        to: first + count >= total ? now : timeOf(first + count),
        deadEvery: DEAD_EVERY,
      });
      const seconds = (performance.now() - started) / 1000;
      const done = first + count;
      console.log(
        `  ${done.toLocaleString('en')} / ${total.toLocaleString('en')} calls (${Math.round((100 * done) / total)} %), ${seconds.toFixed(0)} s, ${Math.round(done / seconds).toLocaleString('en')} calls/s, load ${loadNow()}`,
      );
    }
    const vacuumed = performance.now();
    for (const table of PARTITIONED) await client.query(`VACUUM (ANALYZE) ${table}`);
    console.log(`  VACUUM (ANALYZE) in ${((performance.now() - vacuumed) / 1000).toFixed(0)} s`);
    await defaultRows(client);
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
    await defaultRows(client);
    const deep = (await client.query('SELECT at, id FROM calls WHERE id = $1', [deepId(seeded.n)])).rows[0];
    if (!deep) return null;
    return { total: seeded.n, now: Number(seeded.now), deepCursor: cursorOf(deep) };
  } finally {
    await client.end();
  }
}

const num = (v, digits = 2) => (v === undefined ? '' : v.toFixed(digits));

/** The load average over the last minute, as `cat /proc/loadavg` gives it first. */
const loadNow = () => os.loadavg()[0].toFixed(2);

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
  return { p50: percentile(times, 0.5), p95: percentile(times, 0.95), body, load: loadNow() };
}

const NO_MATCH = 'no-such-text';
/**
 * A parent's phone number of the seed's (call i has +4479111 and i % 100 000 in five digits; every
 * fifth call, i % 5 = 0, is an AuthCode): one call in 100 000, all of them AuthCode calls.
 */
const PHONE = '+447911100125';
/** The same number typed into the search box, spaced as staff write it: the phone's lookup. */
const TYPED_PHONE = '+44 7911 100125';
const PHONE_CASE = `q=${TYPED_PHONE} (the phone, typed)`;
/** The number in double quotes: searched as text, examined in every call under the budget. */
const QUOTED_PHONE_CASE = `q="${PHONE}" (text): first page`;

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
    times.set(name, { p50: percentile(samples, 0.5), p95: percentile(samples, 0.95), load: loadNow() });
  }
  return { rollupSeconds, times };
}

/** A GET of the API or the server `samples` times after 3 unmeasured: p50 and p95. */
async function timeGet(server, url, samples) {
  const times = [];
  for (let i = 0; i < samples + 3; i++) {
    const t = performance.now();
    const res = await fetch(`${server.url}${url}`, { headers: server.headers });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${url}: ${res.status}`);
    if (i >= 3) times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p95: percentile(times, 0.95), load: loadNow() };
}

/**
 * What the outbox costs on PostgreSQL with every partition there is: the database's CPU while the
 * server is idle (its dispatcher polling, its sweep), /metrics and the Deliveries page (both count
 * the deliveries by state).
 */
async function timeOutbox(server, url, name) {
  const idle = await databaseCpu(url, IDLE_SECONDS);
  console.log(
    `  ${name}: the database's CPU, the server idle ${IDLE_SECONDS} s: ${idle.percent.toFixed(2)} % of a core (${idle.connections} connections), load ${loadNow()}`,
  );
  for (const [what, path] of [
    ['GET /metrics', '/metrics'],
    ['Deliveries page (GET /api/deliveries)', '/api/deliveries?limit=50'],
  ]) {
    const m = await timeGet(server, path, Math.min(SAMPLES, 60));
    console.log(`  ${name}: ${what}: p50 / p95 ${num(m.p50)} / ${num(m.p95)} ms, load ${m.load}`);
  }
}

/**
 * History, its count, the Dashboard and Deliveries as a user limited to school 1, and to schools 1
 * and 2 (BENCH_SCHOOLS): each school holds 1/BENCH_SCHOOLS of every kind of call. Their caller,
 * phone and deep page are school 1's.
 */
async function measureScoped(server, name, total, { now, deepCursor, oneDay }) {
  const out = new Map();
  const say = (what, m) =>
    console.log(`  ${name}: ${what}: p50 / p95 ${num(m.p50)} / ${num(m.p95)} ms, load ${m.load}`);
  // School 1's calls are those of floor(i / 5) % SCHOOLS = 0 (seed-calls.mjs): its caller, and a
  // parent's phone (i % 100 000 = 100, an AuthCode: i % 5 = 0) of its (with 20 schools or a divisor).
  const ip = ipOf(Math.floor(Math.min(197_121, total / 2) / (5 * SCHOOLS)) * 5 * SCHOOLS);
  const phone = '+447911100100';
  const filters = {
    'no filter': '',
    'operation=AuthCode': 'operation=AuthCode',
    'binding=soap12': 'binding=soap12',
    'outcome=client-error': 'outcome=client-error',
    'delivery=failed': 'delivery=failed',
    'ip (one caller)': `ip=${ip}`,
    'from/to (one day)': oneDay,
    'operation + outcome + day': `operation=SendMarkNotes&outcome=ok&${oneDay}`,
    'deep keyset page (90 % back)': `cursor=${deepCursor}`,
    "phone (a parent's)": `phone=${encodeURIComponent(phone)}`,
    'q (free text, common): first page': 'q=4479111',
  };
  for (const [who, schoolIds] of [
    ['1 school', [1]],
    ['2 schools', [1, 2]],
  ]) {
    const scoped = await asScopedUser(server, `bench-${schoolIds.join('-')}`, schoolIds);
    for (const [filter, query] of Object.entries(filters)) {
      if (FILTERS && !FILTERS.test(`${who}: ${filter}`)) continue;
      const m = await timeList(scoped, query, { warm: WARM, samples: SAMPLES, mustFind: true });
      out.set(`${who}: ${filter}`, m);
      say(`scoped to ${who}, ${filter}`, m);
    }
    for (const [what, url] of [
      ['count', '/api/calls/count?operation=AuthCode'],
      ['Deliveries page', '/api/deliveries?limit=50'],
      ['Dashboard, 24 hours by hour', statsUrl(now, 1, 'hour')],
      ['Dashboard, 30 days by day', statsUrl(now, 30, 'day')],
      ['Dashboard, 90 days by day', statsUrl(now, 90, 'day')],
    ]) {
      if (FILTERS && !FILTERS.test(`${who}: ${what}`)) continue;
      const m = await timeGet(scoped, url, Math.min(SAMPLES, 60));
      out.set(`${who}: ${what}`, m);
      say(`scoped to ${who}, ${what}`, m);
    }
  }
  return out;
}

const statsUrl = (now, days, bucket) =>
  `/api/stats?from=${new Date(now - days * 86_400_000).toISOString()}&to=${new Date(now).toISOString()}&bucket=${bucket}`;

/** The day the day filters pick: a whole UTC day a month back (with PARTITION_PERIOD=day, one partition). */
const dayStartOf = (now) => Math.floor((now - 30 * DAY) / DAY) * DAY;

/** History's lists measured, by name: the query string of each. */
const listFilters = (total, oneDay, deepCursor) => ({
  'no filter': '',
  'operation=AuthCode': 'operation=AuthCode',
  'binding=soap12': 'binding=soap12',
  'outcome=client-error': 'outcome=client-error',
  'outcome=ok': 'outcome=ok',
  'delivery=failed': 'delivery=failed',
  'delivery=failed + operation': 'delivery=failed&operation=AuthCode',
  'ip (one caller)': `ip=${ipOf(Math.min(197_121, Math.floor(total / 2)))}`,
  'from/to (one day)': oneDay,
  'operation + day': `operation=AuthCode&${oneDay}`,
  'operation + outcome + day': `operation=SendMarkNotes&outcome=ok&${oneDay}`,
  'deep keyset page (90 % back)': `cursor=${deepCursor}`,
  'operation=AuthCode, deep keyset page': `operation=AuthCode&cursor=${deepCursor}`,
  "phone (a parent's: one call in 100 000)": `phone=${encodeURIComponent(PHONE)}`,
  'q (free text, common): first page': 'q=4479111',
  // The same phone typed into the search box: the phone's lookup, as the filter.
  [PHONE_CASE]: `q=${encodeURIComponent(TYPED_PHONE)}`,
});

/**
 * Values no seeded call has (BENCH_FILTERS only): the worst case of a rare value of a filter,
 * every call before the page's end read to find none when nothing serves it.
 */
const RARE_FILTERS = {
  'operation=(unknown), none': 'operation=(unknown)',
  'outcome=server-error, none': 'outcome=server-error',
};

/** The Deliveries page (GET /api/deliveries) and its filters, by name (BENCH_FILTERS only). */
const deliveryFilters = (total) => ({
  'deliveries: no filter': '',
  'deliveries: status=dead': 'status=dead',
  'deliveries: status=sent': 'status=sent',
  'deliveries: status=pending, none': 'status=pending',
  // A call's page links to its deliveries; the deep page's call, an AuthCode with its SMS.
  "deliveries: callId (a call's, 90 % back)": `callId=${deepId(total)}`,
});

/** BENCH_FILTERS: the lists whose names it matches, everyone's and as users limited to schools. */
async function measureFiltered(server, env, name, total, out, { now, deepCursor, oneDay }) {
  const say = (what, m) =>
    console.log(`  ${name}: ${what}: p50 / p95 ${num(m.p50)} / ${num(m.p95)} ms, load ${m.load}`);
  // The roll-ups the Deliveries page's counts add up, made before anything is timed.
  console.log(`  ${name}: the history rolled up ${(await rolledUp(env)).toFixed(1)} s after start`);
  const cases = [
    ...Object.entries(listFilters(total, oneDay, deepCursor)).map(([n, q]) => [n, q, true]),
    ...Object.entries(RARE_FILTERS).map(([n, q]) => [n, q, false]),
  ];
  for (const [filter, query, mustFind] of cases) {
    if (!FILTERS.test(filter)) continue;
    out.lists.set(filter, await timeList(server, query, { warm: WARM, samples: SAMPLES, mustFind }));
    say(filter, out.lists.get(filter));
  }
  for (const [filter, query] of Object.entries(deliveryFilters(total))) {
    if (!FILTERS.test(filter)) continue;
    out.lists.set(filter, await timeGet(server, `/api/deliveries?limit=50&${query}`, SAMPLES));
    say(filter, out.lists.get(filter));
  }
  if (SCHOOLS > 0) out.scoped = await measureScoped(server, name, total, { now, deepCursor, oneDay });
}

/**
 * Everything measured on one store (`name`): `env` starts the server on it; `seeded` from its
 * seeding. Each figure is said as it is had (a long run stopped half-way keeps what it measured).
 */
async function measure(name, env, total, { now, deepCursor }) {
  const out = { lists: new Map(), budget: null, exports: new Map(), dashboard: null, scoped: null };
  const say = (what, m) =>
    console.log(`  ${name}: ${what}: p50 / p95 ${num(m.p50)} / ${num(m.p95)} ms, load ${m.load}`);
  const dayStart = dayStartOf(now);
  const oneDay = `from=${new Date(dayStart).toISOString()}&to=${new Date(dayStart + DAY).toISOString()}`;
  let server;
  const restore = await hideIndexes(env);
  try {
    if (FILTERS) {
      server = await startServer(env);
      await measureFiltered(server, env, name, total, out, { now, deepCursor, oneDay });
      return out;
    }
    if (ONLY !== 'export') {
      server = await startServer(env);
      out.dashboard = await timeDashboard(server, env, now);
      for (const [period, m] of out.dashboard.times) say(`Dashboard, ${period}`, m);
      if (ONLY === 'dashboard') return out;
      if (env.DATABASE_URL) await timeOutbox(server, env.DATABASE_URL, name);
      const filters = listFilters(total, oneDay, deepCursor);
      for (const [filter, query] of Object.entries(filters)) {
        out.lists.set(
          filter,
          await timeList(server, query, { warm: WARM, samples: SAMPLES, mustFind: true }),
        );
        say(filter, out.lists.get(filter));
      }
      // In quotes it is free text, examined in every call's parameters and bodies: its first page
      // may stop at the search's budget before a match (few samples; what it found is said).
      const quoted = `q=${encodeURIComponent(`"${PHONE}"`)}`;
      out.lists.set(
        QUOTED_PHONE_CASE,
        await timeList(server, quoted, { warm: 1, samples: 5, mustFind: false }),
      );
      say(QUOTED_PHONE_CASE, out.lists.get(QUOTED_PHONE_CASE));

      // Free text that matches nothing examines every call: the first page stops at the budget
      // (few samples), then "Load more" is followed back to the oldest call.
      const first = await timeList(server, `q=${NO_MATCH}`, { warm: 1, samples: 5, mustFind: false });
      out.lists.set(`q (no match): first page, budget`, first);
      say('q (no match): first page, budget', first);
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
      console.log(
        `  ${name}: q (no match) followed: ${scanned.toLocaleString('en')} calls examined in ${out.budget.seconds.toFixed(1)} s`,
      );
    }
    if (ONLY !== 'export' && SCHOOLS > 0)
      out.scoped = await measureScoped(server, name, total, { now, deepCursor, oneDay });
    if (ONLY === 'lists') return out;

    // Exports of everything and of one day, read to the end as a client would, the server's peak RSS sampled.
    const exports = {
      'CSV, all calls': ['csv', ''],
      'JSON, all calls': ['json', ''],
      'CSV, one day': ['csv', `&${oneDay}`],
    };
    for (const [exported, [format, filter]] of Object.entries(exports)) {
      if (server) await stop(server.child);
      server = await startServer(env);
      const idle = procStatusMb(server.child.pid, 'VmRSS');
      // The peak is the export's: the high-water mark is reset after the login, whose scrypt
      // (N = 2^15, r = 8) takes 32 MiB for a tenth of a second and would otherwise be the peak.
      const reset = resetPeak(server.child.pid);
      const t = performance.now();
      const res = await fetch(`${server.url}/api/calls/export?format=${format}${filter}`, {
        headers: server.headers,
      });
      if (!res.ok) throw new Error(`export ${exported}: ${res.status} ${await res.text()}`);
      let bytes = 0;
      let newlines = 0;
      for await (const chunk of res.body) {
        bytes += chunk.length;
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) newlines++;
      }
      const seconds = (performance.now() - t) / 1000;
      // CSV: a header line, then a line per call; JSON: `[`, a line per call, `]`.
      const rows = format === 'csv' ? newlines - 1 : newlines - 2;
      const e = {
        idle,
        rows,
        mb: bytes / 1e6,
        seconds,
        peak: procStatusMb(server.child.pid, 'VmHWM'),
        reset,
      };
      out.exports.set(exported, { ...e, load: loadNow() });
      console.log(
        `  ${name}: export ${exported}: ${rows.toLocaleString('en')} rows in ${seconds.toFixed(1)} s, ${Math.round(rows / seconds).toLocaleString('en')} rows/s, RSS idle ${idle.toFixed(0)} MB, peak ${e.peak.toFixed(0)} MB, load ${loadNow()}`,
      );
    }
  } finally {
    if (server) await stop(server.child);
    await restore();
  }
  return out;
}

/**
 * BENCH_WITHOUT's indexes kept from the planner on `env`'s store (the server stopped); answers what
 * gives them back.
 */
async function hideIndexes(env) {
  if (WITHOUT.length === 0) return async () => {};
  if (!env.DATABASE_URL) {
    const db = new SQLite(path.join(env.DATA_DIR, 'school-messaging.db'));
    const made = WITHOUT.map((name) => {
      const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").get(name);
      if (!row) throw new Error(`BENCH_WITHOUT: no index ${name}`);
      db.exec(`DROP INDEX ${name}`);
      return row.sql;
    });
    db.close();
    console.log(`SQLite: measured without ${WITHOUT.join(', ')} (dropped; built again after)`);
    return async () => {
      const again = new SQLite(path.join(env.DATA_DIR, 'school-messaging.db'));
      for (const sqlText of made) again.exec(sqlText);
      again.close();
    };
  }
  const mark = async (valid) => {
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      for (const name of WITHOUT) {
        const { rowCount } = await client.query(
          `UPDATE pg_index SET indisvalid = $2 WHERE indexrelid IN (
             SELECT $1::regclass UNION ALL SELECT inhrelid FROM pg_inherits WHERE inhparent = $1::regclass)`,
          [name, valid],
        );
        if (!valid)
          console.log(`PostgreSQL: measured without ${name} (${rowCount} indexes marked not valid)`);
      }
    } finally {
      await client.end();
    }
  };
  await mark(false);
  return () => mark(true);
}

const secondsSince = (t) => ((performance.now() - t) / 1000).toFixed(1);
const gb = (bytes) => (bytes / 1e9).toFixed(1);

/**
 * A PostgreSQL database with PG_TOTAL calls: as an earlier run seeded it when `kept` (what holds
 * it, in words) and it has them all, else seeded now (emptied first when kept), the schema made
 * by the server started on `env` once.
 */
async function seededDatabase(database, env, kept) {
  let seeded = kept ? await seededAlready(database.url, PG_TOTAL) : null;
  if (seeded) {
    console.log(`PostgreSQL: ${kept}, ${seeded.total.toLocaleString('en')} calls already seeded`);
    await phonesFilled(database.url, env);
    return seeded;
  }
  if (kept) await database.empty();
  await stop((await startServer(env)).child);
  const t = performance.now();
  seeded = { total: PG_TOTAL, ...(await seedPostgres(database.url, PG_TOTAL)) };
  console.log(
    `PostgreSQL: seeded ${PG_TOTAL.toLocaleString('en')} calls (INSERT … SELECT, then VACUUM ANALYZE) in ${secondsSince(t)} s`,
  );
  return seeded;
}

/**
 * Calls seeded before calls kept their phone (migration 0020) get it as seeding now gives it:
 * the AuthCode calls' phone parameter. Once, after the server has migrated the kept database.
 */
async function phonesFilled(url, env) {
  await stop((await startServer(env)).child);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT EXISTS (SELECT 1 FROM calls WHERE phone IS NOT NULL) AS filled`,
    );
    if (rows[0].filled) return;
    const t = performance.now();
    await client.query(
      `UPDATE calls SET phone = params::json->>'phone' WHERE operation = 'AuthCode' AND params IS NOT NULL`,
    );
    await client.query('VACUUM ANALYZE calls');
    console.log(
      `PostgreSQL: the AuthCode calls' phones filled in (seeded before they were kept) in ${secondsSince(t)} s`,
    );
  } finally {
    await client.end();
  }
}

/** The database's size, as pg_database_size says. */
async function databaseSize(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT pg_database_size(current_database())::text AS bytes');
    return Number(rows[0].bytes);
  } finally {
    await client.end();
  }
}

/** Rows a database has given its queries so far (pg_stat_database), to tell that reads went there. */
async function rowsRead(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      'SELECT (tup_returned + tup_fetched)::text AS n FROM pg_stat_database WHERE datname = current_database()',
    );
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

/** BENCH_PLANS's file written from `url`'s database, a line per plan printed. */
async function writePlans(url, seeded, where) {
  if (!PLANS) return;
  const summaries = await explainHistory(url, {
    periodStart,
    dayStart: dayStartOf(seeded.now),
    file: PLANS,
    heading: `History's SQL on ${seeded.total.toLocaleString('en')} calls, ${where}, PARTITION_PERIOD=${PERIOD}`,
  });
  console.log(`PostgreSQL: plans in ${PLANS}:`);
  for (const line of summaries) console.log(`  ${line}`);
}

/** PostgreSQL on the shared server: a fresh database dropped at the end (or BENCH_PG_DATABASE's, kept). */
async function onSharedServer() {
  const admin = await connectAdmin();
  if (admin.reason) {
    console.log(`PostgreSQL skipped: ${admin.reason}`);
    return;
  }
  const database = PG_DATABASE
    ? await keptDatabase(admin.client, PG_DATABASE)
    : await createDatabase(admin.client);
  try {
    const pgEnv = {
      DATABASE_URL: database.url,
      DATA_DIR: path.join(dataDir, 'pg'),
      PARTITION_PERIOD: PERIOD,
    };
    const seeded = await seededDatabase(database, pgEnv, PG_DATABASE && `kept database ${PG_DATABASE}`);
    console.log(`PostgreSQL: database ${gb(await databaseSize(database.url))} GB`);
    await writePlans(database.url, seeded, `database ${database.name} of ${shownAdminUrl}`);
    results.push({
      name: 'PostgreSQL',
      short: 'PG',
      ...(await measure('PostgreSQL', pgEnv, seeded.total, seeded)),
    });
  } finally {
    await stopAll();
    await database.drop();
    await admin.client.end();
  }
}

/**
 * PostgreSQL on a primary and a replica of the bench's own: seeded on the primary, measured with
 * reads on the primary (DATABASE_URL alone), then on the replica (DATABASE_READ_URL too).
 */
async function onPrimaryAndReplica() {
  let t = performance.now();
  const clusters = await startClusters(PG_DIR);
  console.log(
    `PostgreSQL: primary on port ${clusters.primary.port}, replica on ${clusters.replica.port}, in ${clusters.dir} (${secondsSince(t)} s)`,
  );
  try {
    const primaryEnv = {
      DATABASE_URL: clusters.primary.url,
      DATA_DIR: path.join(dataDir, 'pg-primary'),
      PARTITION_PERIOD: PERIOD,
    };
    const seeded = await seededDatabase(
      clusters.database,
      primaryEnv,
      PG_DIR && `kept clusters in ${PG_DIR}`,
    );
    t = performance.now();
    await clusters.caughtUp();
    console.log(`PostgreSQL: the replica caught up in ${secondsSince(t)} s`);
    const folders = clusters.sizes();
    console.log(
      `PostgreSQL: database ${gb(await databaseSize(clusters.primary.url))} GB; folders: primary ${gb(folders.primary)} GB, replica ${gb(folders.replica)} GB`,
    );
    await writePlans(clusters.primary.url, seeded, `the bench's primary (${clusters.dir})`);
    results.push({
      name: 'PG primary',
      short: 'primary',
      ...(await measure('PG primary', primaryEnv, seeded.total, seeded)),
    });
    const replicaEnv = {
      ...primaryEnv,
      DATA_DIR: path.join(dataDir, 'pg-replica'),
      DATABASE_READ_URL: clusters.replica.url,
    };
    const before = await rowsRead(clusters.replica.url);
    results.push({
      name: 'PG, reads on replica',
      short: 'replica',
      ...(await measure('PG, reads on replica', replicaEnv, seeded.total, seeded)),
    });
    console.log(
      `PostgreSQL: the replica gave ${((await rowsRead(clusters.replica.url)) - before).toLocaleString('en')} rows to queries while its server was measured`,
    );
  } finally {
    await stopAll();
    await clusters.close();
  }
}

const results = [];
console.log(`load average at the start: ${fs.readFileSync('/proc/loadavg', 'utf8').trim()}`);
try {
  // 1. SQLite: the server creates the schema, the bench seeds directly, then measures.
  if (SQLITE) {
    const sqliteEnv = { DATA_DIR: dataDir };
    await stop((await startServer(sqliteEnv)).child);
    const t = performance.now();
    const file = path.join(dataDir, 'school-messaging.db');
    let sqliteSeeded = keep ? sqliteSeededAlready(file, TOTAL) : null;
    if (sqliteSeeded) console.log(`SQLite: ${TOTAL.toLocaleString('en')} calls seeded before in ${keep}`);
    else {
      sqliteSeeded = seedSqlite(file, TOTAL);
      console.log(`SQLite: seeded ${TOTAL.toLocaleString('en')} calls in ${secondsSince(t)} s`);
    }
    results.push({
      name: 'SQLite',
      short: 'SQLite',
      ...(await measure('SQLite', sqliteEnv, TOTAL, sqliteSeeded)),
    });
  }
  // 2. PostgreSQL: the same, on the shared server or on a primary and replica of the bench's own
  // (BENCH_PG=0: none).
  if (REPLICA) await onPrimaryAndReplica();
  else if (process.env.BENCH_PG !== '0') await onSharedServer();
} finally {
  killAll();
  if (!keep) fs.rmSync(dataDir, { recursive: true, force: true });
}

// 3. Side by side: each store's p50 / p95, p95 against the target and the load average (1 min)
// when measured; then the last two compared (PostgreSQL / SQLite, or the replica / the primary).
if (results.length === 0) process.exit(0);
const [a, b] = results.length >= 2 ? results.slice(-2) : [];
const width = Math.max(28, ...results.map((r) => r.name.length + 14));
/** The ratio column's width: its heading's. */
const ratioWidth = a ? `  p95 ${b.short} / ${a.short}`.length : 0;

if (FILTERS) {
  // What BENCH_FILTERS measured, each store's p50 / p95 side by side.
  console.log(`\n${WITHOUT.length ? `without ${WITHOUT.join(', ')}` : 'every index'}: p50 / p95 ms`);
  const names = [...new Set(results.flatMap((r) => [...r.lists.keys(), ...(r.scoped?.keys() ?? [])]))];
  console.log(''.padEnd(48), results.map((r) => r.name.padStart(width)).join(''));
  for (const name of names) {
    const cells = results.map((r) => {
      const m = r.lists.get(name) ?? r.scoped?.get(name);
      return (m ? `${num(m.p50)} / ${num(m.p95)}` : '').padStart(width);
    });
    console.log(name.padEnd(48), cells.join(''));
  }
  process.exit(0);
}
if (ONLY !== 'export') printDashboardAndLists();

function printDashboardAndLists() {
  console.log();
  console.log(
    'Dashboard: GET /api/stats'.padEnd(40),
    results
      .map(
        (r) => `${`${r.name} p50 / p95 ms`.padStart(width)}  ${`/ ${STATS_TARGET_MS} ms`.padStart(9)}  load`,
      )
      .join(''),
  );
  for (const name of results[0].dashboard.times.keys()) {
    const cells = results.map((r) => {
      const m = r.dashboard.times.get(name);
      return `${`${num(m?.p50, 1)} / ${num(m?.p95, 1)}`.padStart(width)}  ${num(m && m.p95 / STATS_TARGET_MS).padStart(9)}  ${m?.load ?? ''}`;
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
      .map((r) => `${`${r.name} p50 / p95 ms`.padStart(width)}  ${`/ ${TARGET_MS} ms`.padStart(8)}  load`)
      .join(''),
    a ? `  p95 ${b.short} / ${a.short}` : '',
  );
  for (const name of results[0].lists.keys()) {
    const cells = results.map((r) => {
      const m = r.lists.get(name);
      return `${`${num(m?.p50)} / ${num(m?.p95)}`.padStart(width)}  ${num(m && m.p95 / TARGET_MS).padStart(8)}  ${m?.load ?? ''}`;
    });
    const ratio = a ? num(b.lists.get(name)?.p95 / a.lists.get(name)?.p95) : '';
    console.log(name.padEnd(40), cells.join(''), ratio.padStart(ratioWidth));
  }

  if (results[0].scoped) {
    console.log();
    console.log(
      `As a user limited to schools (of ${SCHOOLS})`.padEnd(48),
      results.map((r) => `${`${r.name} p50 / p95 ms`.padStart(width)}  p95 / target  load`).join(''),
    );
    for (const name of results[0].scoped.keys()) {
      // The lists' target, or the Dashboard's.
      const target = name.includes('Dashboard') ? STATS_TARGET_MS : TARGET_MS;
      const cells = results.map((r) => {
        const m = r.scoped?.get(name);
        return `${`${num(m?.p50)} / ${num(m?.p95)}`.padStart(width)}  ${`${num(m && m.p95 / target)} / ${target}`.padStart(12)}  ${m?.load ?? ''}`;
      });
      console.log(name.padEnd(48), cells.join(''));
    }
  }

  for (const r of results) {
    for (const name of [PHONE_CASE, QUOTED_PHONE_CASE]) {
      const { body } = r.lists.get(name);
      console.log(
        `${name}, ${r.name}, last sample: ${body.items.length} calls found, ${body.search.scanned.toLocaleString('en')} examined, complete: ${body.search.complete}${body.search.phone ? `, searched as the phone ${body.search.phone}` : ''}`,
      );
    }
  }

  console.log(
    `\nq=${NO_MATCH} (matches nothing: every call examined), SEARCH_BUDGET_MS ${process.env.SEARCH_BUDGET_MS ?? 2000}`,
  );
  for (const r of results) {
    const bud = r.budget;
    const share = (100 * bud.first.scanned) / bud.total;
    console.log(
      `${r.name.padEnd(20)} first page: ${bud.first.scanned.toLocaleString('en')} calls examined (${share.toFixed(0)} %), complete: ${bud.first.complete}; ` +
        `followed back ${bud.reachedOldest ? 'to the oldest call' : `for ${FOLLOW_SECONDS} s, ${((100 * bud.scanned) / bud.total).toFixed(0)} % of the calls`}: ` +
        `${bud.pages} pages, ${bud.seconds.toFixed(1)} s, ${Math.round(bud.scanned / bud.seconds).toLocaleString('en')} calls/s`,
    );
  }
  if (a)
    console.log(
      `${b.short} / ${a.short} free-text scan rate: ${num(b.budget.scanned / b.budget.seconds / (a.budget.scanned / a.budget.seconds))}`,
    );
}

console.log();
console.log(
  'export'.padEnd(36),
  'rows'.padStart(10),
  'MB out'.padStart(7),
  'seconds'.padStart(8),
  'rows/s'.padStart(8),
  'idle RSS MB'.padStart(12),
  'peak RSS MB'.padStart(12),
  `  peak / ${TARGET_RSS_MB} MB`,
  '  load',
  a ? `  seconds ${b.short} / ${a.short}` : '',
);
for (const name of results[0].exports.keys()) {
  for (const r of results) {
    const e = r.exports.get(name);
    const ratio = a && r === b ? num(e.seconds / a.exports.get(name).seconds) : '';
    console.log(
      `${name}, ${r.name}`.padEnd(36),
      String(e.rows).padStart(10),
      e.mb.toFixed(0).padStart(7),
      e.seconds.toFixed(1).padStart(8),
      Math.round(e.rows / e.seconds)
        .toLocaleString('en')
        .padStart(8),
      e.idle.toFixed(0).padStart(12),
      e.peak.toFixed(0).padStart(12),
      `  ${(e.peak / TARGET_RSS_MB).toFixed(2).padStart(12)}`,
      e.load.padStart(6),
      ratio.padStart(ratioWidth + 4),
    );
  }
}
if (results.some((r) => [...r.exports.values()].some((e) => !e.reset)))
  console.log(
    'peak RSS since the server started (its high-water mark could not be reset): the login is in it',
  );
