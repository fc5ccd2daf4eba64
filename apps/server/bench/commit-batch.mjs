// What a group commit costs SQLite per AuthCode call, by batch size: the call row (five indexes),
// its delivery (seven) and its attempt row inserted in one transaction of B calls, then the
// attempt's finish in a second one, as the recorder and the dispatcher write them (NORMAL: the
// B-tree and WAL work, without the fsync). The schema and the rows are the server's own: the
// script records a few calls through dist/server.js, stops it, and copies them. Each size runs
// with the deliveries' idempotency keys ordered by time (UUID v7, as the server makes them) and
// random (UUID v4, as it made them before): a random key lands on a page of the unique index of
// its own, which the commit then writes. And with time-ordered keys, the call and its delivery of
// a school (school_id set: an entry more in each of their partial indexes by school, migration
// 0025), where the others belong to none, as a call of an unregistered caller does. Then the calls
// table's bytes a call (its B-tree pages, dbstat) and the row's raw messages as stored: a success's
// answer recorded by reference (migration 0026) keeps no text of its own.
//   node bench/commit-batch.mjs          (BENCH_CALLS: calls per batch size, default 20 000;
//                                         BENCH_BINDING: the calls' binding, http-get or soap11)
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOAP_AUTHCODE } from './full-speed.mjs';
import { openLastRecorded } from './index-cost.mjs';
import { startProcess, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const total = Number(process.env.BENCH_CALLS ?? 20_000);
const binding = process.env.BENCH_BINDING ?? 'http-get';
if (binding !== 'http-get' && binding !== 'soap11') {
  console.log('BENCH_BINDING is http-get or soap11');
  process.exit(2);
}
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-commit-'));
const NO_LIMITS = {
  AUTHCODE_LIMIT_PER_PHONE: 'off',
  AUTHCODE_LIMIT_PER_IP: 'off',
  AUTHCODE_LIMIT_PER_RANGE: 'off',
  ASMX_LIMIT_PER_IP: 'off',
};

// BENCH_INDEXES (`sqlite`, `postgres` or `both`): instead, what each index of calls, deliveries and
// delivery_attempts costs a call (index-cost.mjs, which says how it is measured and its settings).
if (process.env.BENCH_INDEXES) {
  const { indexCosts } = await import('./index-cost.mjs');
  try {
    await indexCosts(process.env.BENCH_INDEXES, { dataDir, server: path.join(here, '../dist/server.js') });
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(0);
}

try {
  const server = await startProcess(path.join(here, '../dist/server.js'), {
    DATA_DIR: dataDir,
    ...NO_LIMITS,
  });
  for (let i = 0; i < 20; i++) {
    const res =
      binding === 'soap11'
        ? await fetch(`${server.url}${SOAP_AUTHCODE.path}`, {
            method: 'POST',
            headers: SOAP_AUTHCODE.headers,
            body: SOAP_AUTHCODE.body.replace('4821', String(1000 + i)),
          })
        : await fetch(`${server.url}/AuthCodeSending.asmx/AuthCode?code=${1000 + i}&phone=%2B447911123456`);
    if (!res.ok) throw new Error(`AuthCode answered ${res.status}`);
  }
  // The dispatcher sends them (log provider) before it stops.
  await new Promise((r) => setTimeout(r, 500));
  await stopProcess(server.child);

  const { db, call, delivery } = openLastRecorded(dataDir);
  const insert = (table, row) =>
    db.prepare(
      `INSERT INTO ${table} (${Object.keys(row).join(', ')}) VALUES (${Object.keys(row).map((c) => `@${c}`)})`,
    );
  const insertCall = insert('calls', call);
  const insertDelivery = insert('deliveries', delivery);
  const insertAttempt = db.prepare('INSERT INTO delivery_attempts (delivery_id, started_at) VALUES (?, ?)');
  const finishAttempt = db.prepare(
    "UPDATE delivery_attempts SET finished_at = ?, outcome = 'sent', response = 'ok' WHERE id = ? AND outcome IS NULL",
  );
  const settle = db.prepare(
    "UPDATE deliveries SET status = 'sent', lease_until = NULL, sent_at = ?, updated_at = ? WHERE id = ? AND status = 'sending'",
  );
  // The server's idempotencyKey (outbox/payload.ts).
  const timeOrdered = (now) => {
    const time = now.toString(16).padStart(12, '0');
    return `${time.slice(0, 8)}-${time.slice(8)}-7${randomUUID().slice(15)}`;
  };
  let newKey = timeOrdered;
  /** The school the calls and deliveries belong to (null: none). */
  let school = null;
  const record = db.transaction((n) => {
    const claimed = [];
    for (let i = 0; i < n; i++) {
      const now = Date.now();
      const callId = insertCall.run({ ...call, at: now, school_id: school }).lastInsertRowid;
      const deliveryId = insertDelivery.run({
        ...delivery,
        call_id: callId,
        school_id: school,
        status: 'sending',
        idempotency_key: newKey(now),
      }).lastInsertRowid;
      claimed.push([deliveryId, insertAttempt.run(deliveryId, now).lastInsertRowid]);
    }
    return claimed;
  });
  const finish = db.transaction((claimed) => {
    const now = Date.now();
    for (const [deliveryId, attemptId] of claimed) {
      finishAttempt.run(now, attemptId);
      settle.run(now, now, deliveryId);
    }
  });

  console.log(
    `The ${binding} AuthCode call's row as the server recorded it: request ${Buffer.byteLength(call.request)} bytes, ` +
      `response ${Buffer.byteLength(call.response)} bytes stored${call.response_ref == null ? '' : ` (its ${call.response_bytes} by reference)`}`,
  );
  console.log(
    `SQLite work per AuthCode call by group-commit size (${total} calls each, NORMAL), µs of CPU (this process's):`,
  );
  console.log('  calls per commit   keys ordered by time   random keys   ordered, of a school');
  const figures = {};
  for (const size of [1, 10, 30, 100]) {
    const row = [];
    for (const [kind, make, of] of [
      ['ordered', timeOrdered, null],
      ['random', () => randomUUID(), null],
      ['school', timeOrdered, 1],
    ]) {
      newKey = make;
      school = of;
      // CPU time, not the clock's: on a shared machine the clock also counts others' turns.
      const start = process.cpuUsage();
      for (let done = 0; done < total; done += size) finish(record(size));
      const used = process.cpuUsage(start);
      const us = (used.user + used.system) / total;
      figures[`${kind}${size}`] = us;
      row.push(us);
    }
    console.log(
      `  ${String(size).padStart(16)}   ${row[0].toFixed(1).padStart(20)}   ${row[1].toFixed(1).padStart(11)}   ${row[2].toFixed(1).padStart(20)}`,
    );
  }
  console.log(
    `  batches of 100 cost ${(figures.ordered100 / figures.ordered10).toFixed(2)} × what batches of 10 cost per call; ` +
      `time-ordered keys ${(figures.ordered10 / figures.random10).toFixed(2)} × what random keys cost (batches of 10); ` +
      `a call of a school ${(figures.school10 / figures.ordered10).toFixed(2)} × one of none (batches of 10)`,
  );
  const { n } = db.prepare('SELECT count(*) AS n FROM calls').get();
  const { bytes } = db.prepare("SELECT sum(pgsize) AS bytes FROM dbstat WHERE name = 'calls'").get();
  console.log(
    `  the calls table: ${(bytes / n).toFixed(0)} bytes a call (${n} calls, its pages; indexes apart)`,
  );
  db.close();
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
