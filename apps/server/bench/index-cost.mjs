// commit-batch.mjs's BENCH_INDEXES: what each index of the write path (calls, deliveries,
// delivery_attempts) costs a call, on SQLite and on partitioned PostgreSQL. The same rows written
// with every index, and with one index dropped, in turns, round after round; an index's cost is the
// median difference, in µs per AuthCode call: its call row, its SMS, the attempt, and the settle
// that marks the SMS sent with the provider's message id (a real provider without status callbacks,
// `http`), of a school, `ok`; SQLite's as this process's CPU time, PostgreSQL's as its server
// process's (the clock counts other work on a shared machine). Tables are filled first, so that an
// entry lands in an index of that size. Keys (the rowid, PostgreSQL's primary keys) are not
// dropped: they are every update's way to its row; SQLite's unique idempotency key is measured by a
// copy of the deliveries without it.
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { connectAdmin, createDatabase } from './pg.mjs';
import { NO_LIMITS, startProcess, stopProcess } from './server-process.mjs';

// Many short measurements, each paired with one of every index: the median of the differences.
// BENCH_CALLS (2 000 a measurement; PostgreSQL: set 20 000 or more, its CPU is counted in 10 ms
// ticks), BENCH_ROUNDS (15), BENCH_PRESEED (100 000 calls written first).
const options = {
  calls: Number(process.env.BENCH_CALLS ?? 2000),
  batch: 10,
  rounds: Number(process.env.BENCH_ROUNDS ?? 15),
  preseed: Number(process.env.BENCH_PRESEED ?? 100_000),
};

/** Twenty AuthCode calls recorded by the built `server` on `env`'s store, their SMS sent (log). */
/**
 * The SQLite database a server recorded into, opened as the server does (WAL, NORMAL), with its last
 * call and delivery as rows to insert again (their ids left out).
 */
export function openLastRecorded(dataDir) {
  const db = new SQLite(path.join(dataDir, 'school-messaging.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -8000');
  const call = db.prepare('SELECT * FROM calls ORDER BY id DESC LIMIT 1').get();
  const delivery = db.prepare('SELECT * FROM deliveries ORDER BY id DESC LIMIT 1').get();
  if (!call || !delivery) {
    db.close();
    throw new Error('the server recorded no AuthCode with its delivery');
  }
  delete call.id;
  delete delivery.id;
  return { db, call, delivery };
}

async function recordSome(server, env) {
  const { url, child } = await startProcess(server, { ...env, ...NO_LIMITS });
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`${url}/AuthCodeSending.asmx/AuthCode?code=${1000 + i}&phone=%2B447911123456`);
    if (!res.ok) throw new Error(`AuthCode answered ${res.status}`);
  }
  await new Promise((r) => setTimeout(r, 500));
  await stopProcess(child);
}

/**
 * commit-batch.mjs's BENCH_INDEXES (`sqlite`, `postgres` or `both`): the schema the built `server`
 * makes, in `dataDir` (SQLite) or a fresh database of BENCH_DATABASE_URL's (PostgreSQL, partitioned
 * by day), the rows copied from the calls it recorded.
 */
export async function indexCosts(which, { dataDir, server }) {
  if (which === 'postgres' || which === 'both') {
    const admin = await connectAdmin();
    if (admin.reason) throw new Error(`PostgreSQL: ${admin.reason}`);
    const database = await createDatabase(admin.client);
    try {
      await recordSome(server, { DATA_DIR: dataDir, DATABASE_URL: database.url, PARTITION_PERIOD: 'day' });
      await postgresIndexCosts(database.url, options);
    } finally {
      await database.drop();
      await admin.client.end();
    }
  }
  if (which === 'postgres') return;
  await recordSome(server, { DATA_DIR: dataDir });
  const { db, call, delivery } = openLastRecorded(dataDir);
  try {
    sqliteIndexCosts(db, { call, delivery, ...options });
  } finally {
    db.close();
  }
}

/** CPU time (user + system) of a process on this machine, in µs (clock ticks of 10 ms). */
function cpuMicros(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

/** Rows per call written: the server's call and SMS, copied from what it recorded. */
function report(title, costs, baseline) {
  console.log(`\n${title}: every index ${baseline.toFixed(1)} µs per call (median)`);
  console.log('  index                                    costs, µs per call (median; each pair)');
  for (const [name, cost] of [...costs].sort((a, b) => median(b[1]) - median(a[1]))) {
    console.log(
      `  ${name.padEnd(40)} ${median(cost).toFixed(1).padStart(8)}   (${cost.map((c) => c.toFixed(1)).join(', ')})`,
    );
  }
}

/**
 * SQLite: `db` (better-sqlite3, the server's schema and one recorded call and SMS) written in
 * batches of `batch` calls, `calls` calls a measurement, `rounds` rounds.
 */
function sqliteIndexCosts(db, { call, delivery, calls, batch, rounds, preseed }) {
  const columns = (row) => Object.keys(row);
  const insert = (table, row) =>
    db.prepare(
      `INSERT INTO ${table} (${columns(row).join(', ')}) VALUES (${columns(row).map((c) => `@${c}`)})`,
    );
  const deliveryRow = { ...delivery, provider: 'http', status: 'sending', school_id: 1 };
  let insertDelivery = insert('deliveries', deliveryRow);
  const callRow = { ...call, school_id: 1, outcome: 'ok' };
  const insertCall = insert('calls', callRow);
  const insertAttempt = db.prepare(
    'INSERT INTO delivery_attempts (delivery_id, provider, started_at) VALUES (?, ?, ?)',
  );
  const finishAttempt = db.prepare(
    "UPDATE delivery_attempts SET finished_at = ?, outcome = 'sent', status = 200, response = 'ok' WHERE id = ? AND outcome IS NULL",
  );
  const settle = db.prepare(
    "UPDATE deliveries SET status = 'sent', lease_until = NULL, leased_by = NULL, provider_id = ?, sent_at = ?, updated_at = ? WHERE id = ? AND status = 'sending'",
  );
  let key = 0;
  const record = db.transaction((n) => {
    const claimed = [];
    for (let i = 0; i < n; i++) {
      const now = Date.now();
      const callId = insertCall.run({ ...callRow, at: now }).lastInsertRowid;
      const deliveryId = insertDelivery.run({
        ...deliveryRow,
        call_id: callId,
        idempotency_key: `${now.toString(16).padStart(12, '0')}-${(key++).toString(16).padStart(20, '0')}`,
        created_at: now,
        updated_at: now,
        next_attempt_at: now,
      }).lastInsertRowid;
      claimed.push([deliveryId, insertAttempt.run(deliveryId, 'http', now).lastInsertRowid]);
    }
    return claimed;
  });
  const finish = db.transaction((claimed) => {
    const now = Date.now();
    for (const [deliveryId, attemptId] of claimed) {
      finishAttempt.run(now, attemptId);
      settle.run(`msg-${deliveryId}-${now}`, now, now, deliveryId);
    }
  });
  // The process's CPU time (user and system: SQLite works on this thread, and writes the WAL
  // through the system), not the clock's: on a shared machine the clock counts others' work too.
  const write = (n) => {
    const start = process.cpuUsage();
    for (let done = 0; done < n; done += batch) finish(record(batch));
    const { user, system } = process.cpuUsage(start);
    return (user + system) / n;
  };
  const lastIds = () => ({
    calls: db.prepare('SELECT coalesce(max(id), 0) AS n FROM calls').get().n,
    deliveries: db.prepare('SELECT coalesce(max(id), 0) AS n FROM deliveries').get().n,
    delivery_attempts: db.prepare('SELECT coalesce(max(id), 0) AS n FROM delivery_attempts').get().n,
  });
  const forget = (mark) => {
    for (const [table, id] of Object.entries(mark).reverse())
      db.prepare(`DELETE FROM ${table} WHERE id > ?`).run(id);
    db.pragma('wal_checkpoint(TRUNCATE)');
  };

  db.pragma('synchronous = OFF');
  for (let done = 0; done < preseed; done += 1000) finish(record(1000));
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const indexes = db
    .prepare(
      "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ('calls', 'deliveries', 'delivery_attempts') ORDER BY tbl_name, name",
    )
    .all();
  const mark = lastIds();
  const baselines = [];
  const costs = new Map(indexes.map((i) => [i.name, []]));
  costs.set('deliveries unique idempotency_key', []);
  write(calls); // warm
  forget(mark);
  // Each index's measurement is paired with one of every index, before it in even rounds and
  // after it in odd ones: the machine's drift (other work on its cores) falls on both alike.
  let round = 0;
  const paired = (without) => {
    const measureWith = () => {
      baselines.push(write(calls));
      forget(mark);
      return baselines[baselines.length - 1];
    };
    const first = round % 2 === 0 ? measureWith() : undefined;
    const us = without();
    forget(mark);
    return (first ?? measureWith()) - us;
  };
  for (; round < rounds; round++) {
    for (const { name, sql } of indexes) {
      costs.get(name).push(
        paired(() => {
          db.exec(`DROP INDEX ${name}`);
          const us = write(calls);
          db.exec(sql);
          return us;
        }),
      );
    }
    // The idempotency key's unique constraint: the deliveries copied into a table without it.
    costs.get('deliveries unique idempotency_key').push(
      paired(() => {
        let us;
        withoutUniqueKey(db, () => {
          insertDelivery = insert('deliveries', deliveryRow);
          us = write(calls);
        });
        insertDelivery = insert('deliveries', deliveryRow);
        return us;
      }),
    );
    if ((round + 1) % 5 === 0) console.log(`  SQLite round ${round + 1} of ${rounds}`);
  }
  report(
    `SQLite (NORMAL), batches of ${batch}, ${calls} calls a measurement, ${preseed} calls before`,
    costs,
    median(baselines),
  );
}

/** Runs `fn` with `deliveries` rebuilt without its UNIQUE constraint, then puts it back. */
function withoutUniqueKey(db, fn) {
  const { sql: tableSql } = db
    .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'deliveries'")
    .get();
  const indexes = db
    .prepare(
      "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'deliveries' AND sql IS NOT NULL",
    )
    .all()
    .map((r) => r.sql);
  const rebuild = (sqlText) => {
    db.pragma('foreign_keys = OFF');
    db.exec('ALTER TABLE deliveries RENAME TO deliveries_old');
    db.exec(sqlText);
    db.exec('INSERT INTO deliveries SELECT * FROM deliveries_old');
    db.exec('DROP TABLE deliveries_old');
    for (const s of indexes) db.exec(s);
  };
  db.pragma('legacy_alter_table = ON');
  rebuild(tableSql.replace(/"idempotency_key" text not null unique/i, '"idempotency_key" text not null'));
  try {
    fn();
  } finally {
    rebuild(tableSql);
    db.pragma('legacy_alter_table = OFF');
  }
}

/**
 * PostgreSQL: `url`'s database (migrated, partitioned by day, with today's partitions): `calls`
 * calls a measurement written by INSERT … SELECT (call, SMS, attempt), then settled by UPDATE, in
 * one transaction rolled back, with every index and with each dropped in it.
 */
async function postgresIndexCosts(url, { calls, rounds, preseed }) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: templates } = await client.query('SELECT * FROM calls ORDER BY id DESC LIMIT 1');
    const call = templates[0];
    if (!call) throw new Error('no call recorded to copy');
    const callColumns = Object.keys(call).filter((c) => !['id', 'at', 'school_id', 'outcome'].includes(c));
    const write = (n, since, step = 1) => `
      WITH c AS (
        INSERT INTO calls (at, school_id, outcome, ${callColumns.join(', ')})
        SELECT ${since}::bigint + g * ${step}, 1, 'ok', ${callColumns.map((c) => `t.${c}`).join(', ')}
        FROM generate_series(1, ${n}) AS g, (SELECT * FROM calls WHERE id = ${call.id}) AS t
        RETURNING id, at, school_id),
      d AS (
        INSERT INTO deliveries (call_id, school_id, kind, provider, recipient, payload, status, attempts,
          next_attempt_at, lease_until, leased_by, idempotency_key, created_at, updated_at)
        SELECT id, school_id, 'sms', 'http', '+447911123456', '{"kind":"sms"}', 'sending', 1,
          at, at + 30000, 'bench', md5(id::text), at, at FROM c
        RETURNING id, created_at)
      INSERT INTO delivery_attempts (delivery_id, provider, started_at) SELECT id, 'http', created_at FROM d`;
    // The settle finds its rows by their keys (id, time), as the server's does: no other index
    // is read, so each is measured for what it costs to write.
    const lastIds = async () => {
      const { rows } = await client.query(
        `SELECT (SELECT coalesce(max(id), 0) FROM deliveries)::bigint AS d,
           (SELECT coalesce(max(id), 0) FROM delivery_attempts)::bigint AS a`,
      );
      return rows[0];
    };
    const settle = (since, last) => [
      `UPDATE delivery_attempts SET finished_at = started_at + 100, outcome = 'sent', status = 200, response = 'ok'
       WHERE id > ${last.a} AND started_at > ${since}`,
      `UPDATE deliveries SET status = 'sent', lease_until = NULL, leased_by = NULL, provider_id = 'msg-' || id,
         sent_at = created_at + 100, updated_at = created_at + 100
       WHERE id > ${last.d} AND created_at > ${since}`,
    ];
    const now = Date.now();
    // Filled first: the last `preseed` calls before now, settled.
    const before = await lastIds();
    await client.query(write(preseed, now - preseed * 10, 10));
    for (const s of settle(now - preseed * 10, before)) await client.query(s);
    await client.query('VACUUM (ANALYZE) calls, deliveries, delivery_attempts');
    const { rows: indexes } = await client.query(
      `SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema()
         AND tablename IN ('calls', 'deliveries', 'delivery_attempts') AND indexname NOT LIKE '%_pkey'
       ORDER BY tablename, indexname`,
    );
    // The CPU of the server process serving this connection (on this machine), not the clock's.
    const backend = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const measure = async (drop) => {
      await client.query('BEGIN');
      try {
        if (drop) await client.query(`DROP INDEX ${drop}`);
        const since = Date.now() + 60_000;
        const last = await lastIds();
        const start = cpuMicros(backend);
        await client.query(write(calls, since));
        for (const s of settle(since, last)) await client.query(s);
        return (cpuMicros(backend) - start) / calls;
      } finally {
        await client.query('ROLLBACK');
      }
    };
    const baselines = [];
    const costs = new Map(indexes.map((i) => [i.name, []]));
    await measure(null); // warm
    for (let round = 0; round < rounds; round++) {
      for (const { name } of indexes) {
        const first = round % 2 === 0 ? await measure(null) : undefined;
        const without = await measure(name);
        baselines.push(first ?? (await measure(null)));
        costs.get(name).push(baselines[baselines.length - 1] - without);
      }
      await client.query('VACUUM calls, deliveries, delivery_attempts');
      console.log(`  PostgreSQL round ${round + 1} of ${rounds}`);
    }
    report(
      `PostgreSQL, daily partitions, ${calls} calls a measurement (INSERT … SELECT, UPDATE), ${preseed} calls before`,
      costs,
      median(baselines),
    );
  } finally {
    await client.end();
  }
}
