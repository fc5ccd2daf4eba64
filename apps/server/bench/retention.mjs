// Retention on PostgreSQL while calls arrive (docs/deployment.md#partitions): retiring a day of
// BENCH_RETIRE_CALLS (1 000 000) calls, with an SMS and its attempt for each AuthCode call, while
// SOAP AuthCode arrives at an even BENCH_RATE (100) calls/s, should raise the calls' p99 by no
// more than 20 %. Not a test, and not in `pnpm bench`: ~15 minutes at a million calls.
//  - a fresh database (bench/pg.mjs); the built server (dist/server.js: run `node build.mjs`
//    first) started once with PARTITION_PERIOD=day to migrate it and make its partitions ahead;
//  - the three tables' partitions of one day 40 days ago made with plain SQL, the calls seeded in
//    it (bench/seed-calls.mjs, each AuthCode call's SMS sent at its one attempt), VACUUM
//    (ANALYZE), CHECKPOINT;
//  - instance A (RETENTION_DAYS=400: it retires nothing) serves the load from bench/paced.mjs in
//    windows of BENCH_SECONDS (60): `baseline`, nothing else; `retirement`, a second instance B
//    started BENCH_B_AT (10) s in with RETENTION_DAYS=30, whose retention at start detaches and
//    drops the day's partitions while A serves, B stopped BENCH_B_SECONDS (20) s after its start;
//    `instance start`, the same B with RETENTION_DAYS=400, retiring nothing: what starting and
//    stopping an instance beside A costs A on this machine (BENCH_CONTROL=0 leaves it out). During
//    the retirement the catalogue is watched: when its transaction began (the distinct ones seen
//    are its tries), when the day's partition went (its commit), when the detached tables were
//    dropped, and the most sessions waiting for a table's lock at once. BENCH_ROUNDS (2) rounds,
//    the day seeded again before each, the control before the retirement in odd rounds, after it
//    in even ones;
//  - then a reference round (BENCH_REFERENCE=0 leaves it out): the same calls in the default
//    partition, which no period partition holds, so that B's retention deletes them in batches.
// B runs at niceness BENCH_B_NICE (19; 0: as A): on two cores its own start (a Node process, its
// jobs and worker) would take CPU from A that instances on machines of their own do not share;
// what it makes PostgreSQL do (the detach, the drops) runs at PostgreSQL's priority, as A's calls.
// BENCH_READER_SECONDS (0) holds a read of `calls` open from B's start for that long in the
// retirement windows, as a pg_dump or a long report would: the DETACH's lock waits behind it.
// Prints each window's p50 / p99 / max and p99 ÷ the round's baseline against the 1.20 target,
// the retirement's p99 ÷ the control's, the slowest call of each second, the retirement's times,
// and the calls started during B's start and during the retirement. Shared machines are noisy:
// the load average is printed beside each window.
//   node build.mjs && node bench/retention.mjs
//   BENCH_RETIRE_CALLS=50000 BENCH_SECONDS=20 BENCH_ROUNDS=1 node bench/retention.mjs  (quick look)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { SOAP_AUTHCODE as SOAP } from './full-speed.mjs';
import { connectAdmin, createDatabase } from './pg.mjs';
import { rolledUp } from './rollups.mjs';
import { runScript } from './run-script.mjs';
import { seedCallsPostgres, seedDeliveriesPostgres } from './seed-calls.mjs';
import { killAll, NO_LIMITS, startProcess, stopAll, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const SERVER = process.env.BENCH_SERVER ?? path.join(here, '../dist/server.js');
const CALLS = Number(process.env.BENCH_RETIRE_CALLS ?? 1_000_000);
const RATE = Number(process.env.BENCH_RATE ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const B_AT = Number(process.env.BENCH_B_AT ?? 10);
const B_SECONDS = Number(process.env.BENCH_B_SECONDS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONTROL = process.env.BENCH_CONTROL !== '0';
// A read of the calls held from B's start for that many seconds in the retirement windows (0: none).
const READER = Number(process.env.BENCH_READER_SECONDS ?? 0);
const REFERENCE = process.env.BENCH_REFERENCE !== '0';
const B_NICE = Number(process.env.BENCH_B_NICE ?? 19);
const DAYS_BACK = 40;
const TARGET = 1.2;
const DAY = 86_400_000;
const TABLES = ['calls', 'deliveries', 'delivery_attempts'];

if (process.platform !== 'linux') {
  console.log('retention: reads /proc/loadavg, so Linux only; skipped.');
  process.exit(0);
}
const admin = await connectAdmin();
if (!admin.client) {
  console.log(`retention: PostgreSQL cannot be used (${admin.reason}); skipped.`);
  process.exit(0);
}

const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const ms = (v) => (v === undefined ? '—' : `${v.toFixed(1)} ms`);
const since = (t) => ((performance.now() - t) / 1000).toFixed(1);

const day = Math.floor((Date.now() - DAYS_BACK * DAY) / DAY) * DAY;
const stamp = new Date(day).toISOString().slice(0, 10).replaceAll('-', '');
/** The day's partition of each table, as the server names them (store/partitions.ts). */
const partitionOf = (table) => `${table}_p${stamp}`;

const database = await createDatabase(admin.client);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-retention-'));
const env = (name, days) => ({
  ...NO_LIMITS,
  DATABASE_URL: database.url,
  DATA_DIR: path.join(dataDir, name),
  PARTITION_PERIOD: 'day',
  RETENTION_DAYS: String(days),
});
const client = new pg.Client({ connectionString: database.url });

/**
 * The day's calls (with their SMS and attempts) in partitions of their own, or with `partitioned`
 * false in the default partitions; VACUUM (ANALYZE) and a CHECKPOINT, so that a window does not
 * pay for the seeding's dirty pages. Prints the time taken and the tables' sizes (rows as
 * estimated by ANALYZE).
 */
async function seed(partitioned) {
  const t = performance.now();
  const tables = partitioned ? TABLES.map(partitionOf) : TABLES.map((table) => `${table}_default`);
  if (partitioned)
    for (const table of TABLES)
      await client.query(
        `CREATE TABLE ${partitionOf(table)} PARTITION OF ${table} FOR VALUES FROM (${day}) TO (${day + DAY})`,
      );
  await seedCallsPostgres(client, { total: CALLS, from: day, span: DAY });
  await seedDeliveriesPostgres(client, { from: day, to: day + DAY, attempts: true });
  for (const table of tables) await client.query(`VACUUM (ANALYZE) ${table}`);
  await client.query('CHECKPOINT');
  const { rows } = await client.query(
    `SELECT relname AS name, reltuples::bigint AS n, pg_total_relation_size(oid) AS bytes
     FROM pg_class WHERE relname = ANY($1) ORDER BY relname`,
    [tables],
  );
  console.log(
    `seeded ${CALLS.toLocaleString('en')} calls on ${new Date(day).toISOString().slice(0, 10)} ${partitioned ? 'in its partitions' : 'in the default partitions'} in ${since(t)} s: ` +
      rows
        .map(
          (r) => `${r.name} ~${Number(r.n).toLocaleString('en')} rows ${(r.bytes / 2 ** 20).toFixed(0)} MiB`,
        )
        .join(', '),
  );
}

/** Waits (a minute at most) until each table has its partition of the day a week from now. */
async function madeAhead() {
  const ahead = new Date(Date.now() + 7 * DAY).toISOString().slice(0, 10).replaceAll('-', '');
  for (let i = 0; i < 600; i++) {
    const { rows } = await client.query(
      'SELECT count(to_regclass(t)) = 3 AS made FROM unnest($1::text[]) AS t',
      [TABLES.map((table) => `${table}_p${ahead}`)],
    );
    if (rows[0].made) return;
    await sleep(100);
  }
  throw new Error('the server did not make its partitions ahead in a minute');
}

/** Instance B on the same database; its log lines are kept, with when each arrived. */
async function startB(days) {
  const t = Date.now();
  const b = await startProcess(
    SERVER,
    { ...env('b', days), LOG_LEVEL: 'info' },
    { stdout: 'pipe', nice: B_NICE },
  );
  const lines = [];
  readline.createInterface({ input: b.child.stdout }).on('line', (line) => {
    try {
      lines.push({ arrived: Date.now(), ...JSON.parse(line) });
    } catch {
      // Not JSON: not a log line.
    }
  });
  return { ...b, spawned: t, ready: Date.now(), lines };
}

/**
 * The catalogue every 20 ms until stopped: the retirement's transaction (a session detaching a
 * partition, locking the tables or moving rows out of a detached one: the distinct transactions
 * seen are its tries, those caught at it),
 * when the day's calls partition went (the commit), when the detached tables went (the drops),
 * the most sessions waiting for a table's lock at once, what a waiting DETACH waited behind
 * (each session's state and statement, and how long its transaction had been running at most),
 * and the transactions rolled back meanwhile (the tries refused their locks).
 */
function watch() {
  const w = {
    tries: new Set(),
    firstSeen: null,
    committed: null,
    dropped: null,
    maxWaiting: 0,
    blockers: new Map(),
    rollbacks: { first: null, last: null },
    stop: false,
  };
  w.running = (async () => {
    const calls = partitionOf('calls');
    while (!w.stop) {
      const { rows } = await client.query(
        `SELECT to_regclass($1) IS NOT NULL AS attached,
           (SELECT count(*)::int FROM pg_class WHERE relname LIKE 'retired\\_%') AS detached,
           (SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()) AS rollbacks,
           (SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database()
              AND wait_event = 'relation') AS waiting,
           (SELECT array_agg(extract(epoch FROM xact_start) * 1000) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'
                AND xact_start IS NOT NULL
                AND (query ILIKE '%DETACH PARTITION%' OR query ILIKE 'LOCK TABLE%'
                  OR (query ILIKE '%retired\\_%' AND query NOT ILIKE 'DROP%'))) AS detaching,
           (SELECT json_agg(json_build_object('state', b.state, 'query', left(b.query, 120),
                'ms', round(extract(epoch FROM clock_timestamp() - b.xact_start) * 1000)))
              FROM pg_stat_activity d, unnest(pg_blocking_pids(d.pid)) AS blocking(pid)
                JOIN pg_stat_activity b ON b.pid = blocking.pid
              WHERE d.datname = current_database() AND d.wait_event = 'relation'
                AND d.query ILIKE '%DETACH PARTITION%') AS blockers`,
        [calls],
      );
      const now = Date.now();
      const r = rows[0];
      for (const xact of r.detaching ?? []) {
        w.tries.add(Math.round(xact));
        w.firstSeen ??= now;
      }
      w.maxWaiting = Math.max(w.maxWaiting, r.waiting);
      w.rollbacks.first ??= Number(r.rollbacks);
      w.rollbacks.last = Number(r.rollbacks);
      for (const b of r.blockers ?? []) {
        const key = `${b.state}: ${b.query.replace(/\s+/g, ' ')}`;
        w.blockers.set(key, Math.max(w.blockers.get(key) ?? 0, b.ms ?? 0));
      }
      if (!r.attached && w.committed === null) w.committed = now;
      if (w.committed !== null && r.detached === 0 && w.dropped === null) w.dropped = now;
      await sleep(20);
    }
  })();
  return w;
}

/** A window of the paced load on A; `during` runs beside it, started with it. */
async function window(a, during = async () => ({})) {
  const started = Date.now();
  const [load, extra] = await Promise.all([
    runScript('paced.mjs', a.url, SOAP, {
      rate: RATE,
      seconds: SECONDS,
      slowest: Math.round(RATE * SECONDS),
    }),
    during(started),
  ]);
  if (load.failed > 0) throw new Error(`${load.failed} calls failed`);
  return { ...load, started, ended: started + SECONDS * 1000, loadavg: loadavg(), ...extra };
}

/**
 * A transaction that has read `calls` (as a History export or a long search has), holding its
 * lock on the table and its partitions for `seconds`: a DETACH waits behind it.
 */
async function readCalls(seconds) {
  const reader = new pg.Client({ connectionString: database.url });
  await reader.connect();
  await reader.query('BEGIN');
  await reader.query('SELECT 1 FROM calls LIMIT 1');
  return sleep(seconds * 1000)
    .then(() => reader.query('COMMIT'))
    .finally(() => reader.end());
}

/**
 * B started B_AT s into the window with RETENTION_DAYS `days`, and stopped B_SECONDS after (both
 * windows with B see it start and stop alike), or once its retention has logged `doneWhen`'s line
 * if that is later (10 minutes at most); the catalogue watched meanwhile, and with `reader` a read
 * of the calls held open (BENCH_READER_SECONDS).
 */
const withB =
  (days, { doneWhen, reader = false } = {}) =>
  async (started) => {
    await sleep(Math.max(0, started + B_AT * 1000 - Date.now()));
    // Watched in both kinds of window: the watch's own queries (50 a second) are then in both.
    const w = watch();
    const reading = reader && READER > 0 ? readCalls(READER) : null;
    const b = await startB(days);
    const deadline = Date.now() + 600_000;
    while (doneWhen && !b.lines.some(doneWhen) && Date.now() < deadline) {
      if (b.lines.some((l) => l.msg === 'retention sweep failed')) break;
      await sleep(50);
    }
    await reading;
    await sleep(Math.max(0, b.spawned + B_SECONDS * 1000 - Date.now()));
    await stopProcess(b.child);
    b.stopped = Date.now();
    await sleep(Math.max(0, started + SECONDS * 1000 - Date.now()));
    w.stop = true;
    await w.running;
    const failed = b.lines.find((l) => l.msg === 'retention sweep failed');
    if (failed) throw new Error(`B's retention failed: ${JSON.stringify(failed.err ?? failed)}`);
    return { b, w, done: doneWhen && b.lines.find(doneWhen) };
  };

const dropped = (l) => l.msg === 'old partitions dropped';
const removed = (l) => l.msg === 'old calls removed';

const rounds = [];
try {
  await client.connect();
  console.log(
    `retention — SOAP AuthCode at ${RATE} calls/s, ${SECONDS} s windows, B started ${B_AT} s in at niceness ${B_NICE}; load average ${loadavg()}`,
  );
  // 1. The schema, and the server's own partitions: today's to a week ahead.
  const migrating = await startProcess(SERVER, env('migrate', 400));
  await madeAhead();
  await stopProcess(migrating.child);
  // 2. Instance A, started once the day is seeded: it rolls the day up at once, and is waited for.
  let a;
  for (let round = 0; round < ROUNDS + (REFERENCE ? 1 : 0); round++) {
    const reference = round === ROUNDS;
    await seed(!reference);
    a ??= await startProcess(SERVER, env('a', 400));
    await rolledUp({ DATABASE_URL: database.url });
    // A warmed up, unmeasured.
    await runScript('paced.mjs', a.url, SOAP, { rate: RATE, seconds: 5 });
    const r = { reference, windows: [] };
    rounds.push(r);
    r.windows.push({ name: 'baseline', ...(await window(a)) });
    const control = async () => {
      if (CONTROL && !reference) r.windows.push({ name: 'instance start', ...(await window(a, withB(400))) });
    };
    // The control before the retirement in odd rounds, after it in even ones.
    if (round % 2 === 0) await control();
    r.windows.push({
      name: reference ? 'batch deletion' : 'retirement',
      ...(await window(a, withB(30, { doneWhen: reference ? removed : dropped, reader: !reference }))),
    });
    if (round % 2 === 1) await control();
    print(r, round);
  }
  await stopProcess(a.child);
} finally {
  killAll();
  await stopAll();
  await client.end().catch(() => {});
  await database.drop().catch(() => {});
  await admin.client.end();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

function print(r, round) {
  const base = r.windows[0];
  console.log(
    `\n${r.reference ? 'reference: the calls in the default partition, deleted in batches' : `round ${round + 1}: the calls in their day's partitions, retired whole`}`,
  );
  console.log(
    `${'window'.padEnd(16)}${'calls'.padStart(7)}${'p50'.padStart(10)}${'p99'.padStart(10)}${'max'.padStart(10)}${'p99 ÷ baseline'.padStart(16)}  load average`,
  );
  for (const w of r.windows) {
    const ratio = w.p99 / base.p99;
    const verdict = w === base ? '' : ` ${ratio <= TARGET ? '(≤ 1.20: met)' : '(> 1.20: NOT met)'}`;
    console.log(
      `${w.name.padEnd(16)}${String(w.sent).padStart(7)}${ms(w.p50).padStart(10)}${ms(w.p99).padStart(10)}${ms(w.max).padStart(10)}${(w === base ? '' : ratio.toFixed(2)).padStart(16)}  ${w.loadavg}${verdict}`,
    );
  }
  const control = r.windows.find((w) => w.name === 'instance start');
  const retired = r.windows.find((w) => w.name === 'retirement');
  if (control && retired)
    console.log(
      `retirement ÷ instance start (the same B started and stopped, retiring nothing): p99 ${(retired.p99 / control.p99).toFixed(2)}`,
    );
  for (const w of r.windows) {
    // The slowest call started in each second of the window, where a spike was.
    const perSecond = Array.from({ length: SECONDS }, () => 0);
    for (const [t, v] of w.slowest) {
      const i = Math.floor((t - w.started) / 1000);
      if (i >= 0 && i < SECONDS) perSecond[i] = Math.max(perSecond[i], v);
    }
    console.log(
      `${w.name}: the slowest call started in each second, ms: ${perSecond.map((v) => v.toFixed(0)).join(' ')}`,
    );
    if (!w.b) continue;
    const at = (t) => (t === null || t === undefined ? '—' : `${((t - w.started) / 1000).toFixed(2)} s`);
    const { b, done } = w;
    console.log(
      `${w.name}: B spawned at ${at(b.spawned)}, ready at ${at(b.ready)}, stopped at ${at(b.stopped)}, its log line ${done ? `'${done.msg}' at ${at(done.time)} ${JSON.stringify({ partitions: done.partitions?.length, calls: done.calls, kept: done.kept, removed: done.removed })}` : 'none'}`,
    );
    if (w.w && done) {
      const { tries, firstSeen, committed, dropped: gone, maxWaiting } = w.w;
      const inside = done && done.time <= w.ended;
      console.log(
        `  catalogue: DETACH first seen at ${at(firstSeen)} (${tries.size} transaction${tries.size === 1 ? '' : 's'}${tries.size ? `, the first begun at ${at(Math.min(...tries))}` : ''}), the day's calls partition gone at ${at(committed)} (${tries.size ? `${committed - Math.min(...tries)} ms after the first began` : '—'}), the detached tables dropped by ${at(gone)}; at most ${maxWaiting} sessions waiting for a lock; ${w.w.rollbacks.last - w.w.rollbacks.first} transactions rolled back in the database meanwhile (tries refused, as the statistics have them); ${inside ? 'done within the window' : 'NOT done within the window'}`,
      );
      for (const [what, age] of w.w.blockers)
        console.log(`  the DETACH waited behind (its transaction ${age} ms old at most): ${what}`);
    }
    // Every call, by when it started: those started while B was starting, and while it retired.
    const spans = [["B's start", b.spawned, b.ready]];
    if (w.w) {
      const begun = w.w.tries.size ? Math.min(...w.w.tries) : (w.w.firstSeen ?? w.w.committed);
      if (begun !== null) spans.push(['the retirement', begun - 250, w.w.dropped ?? done?.time]);
    } else if (done) spans.push(['the batch deletion', b.ready, done.time]);
    const slowest = w.slowest.slice(0, Math.ceil(w.slowest.length / 100));
    for (const [name, from, to] of spans) {
      const times = w.slowest.filter(([t]) => t >= from && t <= to).map(([, v]) => v);
      const { p50, p99, max } = stats(times);
      const worst = slowest.filter(([t]) => t >= from && t <= to).length;
      // Above the baseline's p99, they are what the event could add to the window's slowest 1 %.
      const above = times.filter((v) => v > base.p99).length;
      console.log(
        `  calls started during ${name} (${at(from)} to ${at(to)}): ${times.length}, p50 ${ms(p50)}, p99 ${ms(p99)}, max ${ms(max)}; ${worst} of the window's slowest 1 % (${ms(slowest.at(-1)?.[1])} and up), ${above} slower than the baseline's p99`,
      );
    }
  }
}

/** p50, p99 and max of some calls' times. */
function stats(times) {
  const sorted = [...times].sort((x, y) => x - y);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) };
}
