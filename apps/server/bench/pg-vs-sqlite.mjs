// PostgreSQL against SQLite for the durable call (docs/performance.md#postgresql-against-sqlite):
// the built server on SQLite (SQLITE_SYNCHRONOUS=FULL) and on a fresh PostgreSQL database
// (BENCH_DATABASE_URL, bench/pg.mjs), one instance each, the log providers, limits off, loaded in
// turn with SOAP AuthCode by wrk (BENCH_CONNECTIONS (16) connections, BENCH_SECONDS (6) a round,
// BENCH_ROUNDS (2) rounds alternating; with BENCH_BASELINE, another build's dist/server.js on
// PostgreSQL is a third row). Each row prints req/s, the server process's CPU per call (every
// thread, /proc) and, for PostgreSQL, its own CPU per call: the processes of its cluster (the
// children of the postmaster the bench is connected to) serving the row's database, and those
// serving none (WAL writer, checkpointer, background writer, launchers; shown apart, as other
// databases' writes wake them too), not the backends of other databases. Then, each PostgreSQL
// round against the SQLite round of its turn, PostgreSQL's throughput ÷ SQLite's and (ours +
// PostgreSQL's µs a call) ÷ SQLite's server µs a call: medians and spread.
//   node bench/pg-vs-sqlite.mjs
//   BENCH_SERVER=/tmp/base/apps/server/dist/server.js node bench/pg-vs-sqlite.mjs  (another build)
//   BENCH_BASELINE=/tmp/base/apps/server/dist/server.js node bench/pg-vs-sqlite.mjs  (beside it)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, fullSpeed, LOAD_TOOL, SOAP_AUTHCODE as SOAP, TICK_US } from './full-speed.mjs';
import { median } from './median.mjs';
import { connectAdmin, createDatabase } from './pg.mjs';
import { NO_LIMITS, startProcess, stopAll, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 6);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);

if (process.platform !== 'linux') {
  console.log('pg-vs-sqlite reads /proc, so Linux only; skipped.');
  process.exit(0);
}

/**
 * CPU ticks, by pid, of the children of `postmaster` that serve `database` (its connections and
 * autovacuum workers), and of those serving no database (`shared`: the WAL writer, checkpointer,
 * background writer, launchers: other databases' writes wake them too). A backend's title is
 * `postgres: [<cluster>: ]<user> <database> <client> <state>`, an autovacuum worker's
 * `postgres: [<cluster>: ]autovacuum worker <database>`; the others name no database.
 */
function postgresTicks(postmaster, database) {
  const ticks = new Map();
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (parentOf(Number(pid)) !== postmaster) continue;
      const title = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const served =
        /autovacuum worker (\S+)/.exec(title)?.[1] ?? / \S+ (\S+) (?:\S+\(\d+\)|\[local\]) /.exec(title)?.[1];
      if (served === undefined || served === database)
        ticks.set(pid, { shared: served === undefined, ticks: cpuTicks(Number(pid)) });
    } catch {
      // Gone meanwhile.
    }
  }
  return ticks;
}

/**
 * The ticks between two readings of postgresTicks, of the processes there at the second (those
 * started meanwhile from 0; what one that ended meanwhile used since the first is not known).
 */
function ticksBetween(before, after) {
  const spent = { backends: 0, shared: 0 };
  for (const [pid, now] of after) {
    const used = now.ticks - (before.get(pid)?.ticks ?? 0);
    if (now.shared) spent.shared += used;
    else spent.backends += used;
  }
  return spent;
}

/** The parent of a process (the postmaster of a backend). */
function parentOf(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

const admin = await connectAdmin();
if (!admin.client) {
  console.log(`pg-vs-sqlite: PostgreSQL cannot be used (${admin.reason}); skipped.`);
  process.exit(0);
}
// The cluster's postmaster: the parent of the admin connection's backend (on this machine).
const { rows: backend } = await admin.client.query('SELECT pg_backend_pid() AS pid');
const postmaster = parentOf(backend[0].pid);
const load = () => os.loadavg()[0].toFixed(1);
const loadBefore = load();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-pg-vs-sqlite-'));
const databases = [];
try {
  const script = process.env.BENCH_SERVER ?? path.join(here, '../dist/server.js');
  const baseline = process.env.BENCH_BASELINE;
  /** The rows, each a server of its own, loaded in this order every round. */
  const rows = [
    { label: 'SQLite FULL, one instance', script, env: { SQLITE_SYNCHRONOUS: 'FULL' } },
    { label: 'PostgreSQL, one instance', script, pg: true },
    ...(baseline ? [{ label: 'PostgreSQL, baseline build', script: baseline, pg: true }] : []),
  ];
  for (const [i, row] of rows.entries()) {
    const database = row.pg ? await createDatabase(admin.client) : undefined;
    if (database) databases.push(database);
    row.database = database?.name;
    row.server = await startProcess(row.script, {
      DATA_DIR: path.join(dataDir, String(i)),
      ...(database ? { DATABASE_URL: database.url } : {}),
      ...row.env,
      ...NO_LIMITS,
    });
    row.results = [];
  }
  for (const row of rows) await fullSpeed(row.server.url, SOAP, 2, connections);
  for (let round = 0; round < rounds; round++) {
    for (const row of rows) {
      const ours = cpuTicks(row.server.child.pid);
      const theirs = row.pg ? postgresTicks(postmaster, row.database) : undefined;
      const answered = await fullSpeed(row.server.url, SOAP, seconds, connections);
      const after = row.pg ? postgresTicks(postmaster, row.database) : undefined;
      const perCall = (ticks) => (ticks * TICK_US) / answered;
      row.results.push({
        rps: answered / seconds,
        us: perCall(cpuTicks(row.server.child.pid) - ours),
        ...(theirs && after
          ? (() => {
              const spent = ticksBetween(theirs, after);
              return { pgUs: perCall(spent.backends + spent.shared), sharedUs: perCall(spent.shared) };
            })()
          : {}),
      });
    }
  }
  for (const row of rows) await stopProcess(row.server.child);
  console.log(
    `pg-vs-sqlite — SOAP AuthCode, ${LOAD_TOOL}, ${connections} connections, ${seconds} s a round, ${rounds} rounds alternating; load average ${loadBefore} → ${load()}`,
  );
  console.log(
    `${'row'.padEnd(34)}${'req/s'.padStart(8)}${'server µs'.padStart(11)}${'PostgreSQL µs'.padStart(15)}${'of which shared'.padStart(17)}`,
  );
  for (const row of rows)
    for (const r of row.results)
      console.log(
        `${row.label.padEnd(34)}${r.rps.toFixed(0).padStart(8)}${r.us.toFixed(0).padStart(11)}${(r.pgUs?.toFixed(0) ?? '—').padStart(15)}${(r.sharedUs?.toFixed(0) ?? '—').padStart(17)}`,
      );
  const shown = (values, digits = 2) => {
    const [lo, hi] = [Math.min(...values), Math.max(...values)];
    return `${median(values).toFixed(digits)} (${lo.toFixed(digits)}–${hi.toFixed(digits)})`;
  };
  const [sqliteRow, ...pgRows] = rows;
  const sqliteRounds = sqliteRow.results;
  console.log(
    `\nmedians of ${rounds} rounds: ${sqliteRow.label} ${median(sqliteRounds.map((r) => r.rps)).toFixed(0)} req/s, ${median(sqliteRounds.map((r) => r.us)).toFixed(0)} µs a call`,
  );
  for (const row of pgRows) {
    const pg = row.results;
    console.log(
      `${row.label}: ${median(pg.map((r) => r.rps)).toFixed(0)} req/s, ${median(pg.map((r) => r.us)).toFixed(0)} + ${median(pg.map((r) => r.pgUs)).toFixed(0)} µs a call (ours + PostgreSQL's)`,
    );
    // Each PostgreSQL round against the SQLite round of the same turn.
    const throughput = pg.map((r, i) => r.rps / sqliteRounds[i].rps);
    const cpu = pg.map((r, i) => (r.us + r.pgUs) / sqliteRounds[i].us);
    console.log(`  throughput ÷ SQLite's, median (range) of the rounds: ${shown(throughput)} (target ≥ 0.7)`);
    console.log(
      `  (ours + PostgreSQL's µs a call) ÷ SQLite's server µs a call: ${shown(cpu)} (target ≤ 1.6)`,
    );
  }
} finally {
  await stopAll();
  for (const database of databases) await database.drop().catch(() => {});
  await admin.client.end();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
