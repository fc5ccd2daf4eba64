// PostgreSQL against SQLite for the durable call (docs/performance.md#postgresql-against-sqlite):
// the built server on SQLite (SQLITE_SYNCHRONOUS=FULL) and on a fresh PostgreSQL database
// (BENCH_DATABASE_URL, bench/pg.mjs), one instance each, the log providers, limits off, loaded in
// turn with SOAP AuthCode by wrk (BENCH_CONNECTIONS (16) connections, BENCH_SECONDS (6) a round, BENCH_ROUNDS (2)
// rounds alternating). Each row prints req/s, the server process's CPU per call (every thread,
// /proc) and, for PostgreSQL, its own processes' CPU per call (every `postgres` process on this
// machine, /proc: run it on a quiet server), then PostgreSQL's throughput ÷ SQLite's.
//   node bench/pg-vs-sqlite.mjs
//   BENCH_SERVER=/tmp/base/apps/server/dist/server.js node bench/pg-vs-sqlite.mjs  (another build)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, fullSpeed, LOAD_TOOL, SOAP_AUTHCODE as SOAP, TICK_US } from './full-speed.mjs';
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

/** CPU ticks of every process named `postgres` (the postmaster, its backends and workers). */
function postgresTicks() {
  let ticks = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      ticks += cpuTicks(Number(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return ticks;
}

const admin = await connectAdmin();
if (!admin.client) {
  console.log(`pg-vs-sqlite: PostgreSQL cannot be used (${admin.reason}); skipped.`);
  process.exit(0);
}
const database = await createDatabase(admin.client);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-pg-vs-sqlite-'));
try {
  const script = process.env.BENCH_SERVER ?? path.join(here, '../dist/server.js');
  const sqlite = await startProcess(script, {
    DATA_DIR: path.join(dataDir, 'sqlite'),
    SQLITE_SYNCHRONOUS: 'FULL',
    ...NO_LIMITS,
  });
  const postgres = await startProcess(script, {
    DATA_DIR: path.join(dataDir, 'pg'),
    DATABASE_URL: database.url,
    ...NO_LIMITS,
  });
  for (const server of [sqlite, postgres]) await fullSpeed(server.url, SOAP, 2, connections);
  const results = { sqlite: [], postgres: [] };
  for (let round = 0; round < rounds; round++) {
    for (const [name, server] of [
      ['sqlite', sqlite],
      ['postgres', postgres],
    ]) {
      const ours = cpuTicks(server.child.pid);
      const theirs = postgresTicks();
      const answered = await fullSpeed(server.url, SOAP, seconds, connections);
      results[name].push({
        rps: answered / seconds,
        us: ((cpuTicks(server.child.pid) - ours) * TICK_US) / answered,
        pgUs: name === 'postgres' ? ((postgresTicks() - theirs) * TICK_US) / answered : undefined,
      });
    }
  }
  for (const server of [sqlite, postgres]) await stopProcess(server.child);
  console.log(
    `pg-vs-sqlite — SOAP AuthCode, ${LOAD_TOOL}, ${connections} connections, ${seconds} s a round, ${rounds} rounds alternating`,
  );
  console.log(
    `${'row'.padEnd(34)}${'req/s'.padStart(8)}${'server µs'.padStart(11)}${'PostgreSQL µs'.padStart(15)}`,
  );
  for (const [name, label] of [
    ['sqlite', 'SQLite FULL, one instance'],
    ['postgres', 'PostgreSQL, one instance'],
  ])
    for (const r of results[name])
      console.log(
        `${label.padEnd(34)}${r.rps.toFixed(0).padStart(8)}${r.us.toFixed(0).padStart(11)}${(r.pgUs?.toFixed(0) ?? '—').padStart(15)}`,
      );
  const mean = (rows, key) => rows.reduce((n, r) => n + r[key], 0) / rows.length;
  const ratio = mean(results.postgres, 'rps') / mean(results.sqlite, 'rps');
  console.log(`\nPostgreSQL's throughput ÷ SQLite's: ${ratio.toFixed(2)} (target ≥ 0.8)`);
} finally {
  await stopAll();
  await database.drop().catch(() => {});
  await admin.client.end();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
