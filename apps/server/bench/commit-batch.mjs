// What a group commit costs SQLite per AuthCode call, by batch size: the call row (five indexes),
// its delivery (seven) and its attempt row inserted in one transaction of B calls, then the
// attempt's finish in a second one, as the recorder and the dispatcher write them (NORMAL: the
// B-tree and WAL work, without the fsync). The schema and the rows are the server's own: the
// script records a few calls through dist/server.js, stops it, and copies them.
//   node bench/commit-batch.mjs          (BENCH_CALLS: calls per batch size, default 20 000)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import { startProcess, stopProcess } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const total = Number(process.env.BENCH_CALLS ?? 20_000);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-commit-'));
const NO_LIMITS = { AUTHCODE_LIMIT_PER_PHONE: 'off', AUTHCODE_LIMIT_PER_IP: 'off', ASMX_LIMIT_PER_IP: 'off' };

try {
  const server = await startProcess(path.join(here, '../dist/server.js'), {
    DATA_DIR: dataDir,
    ...NO_LIMITS,
  });
  for (let i = 0; i < 20; i++) {
    const res = await fetch(
      `${server.url}/AuthCodeSending.asmx/AuthCode?code=${1000 + i}&phone=%2B447911123456`,
    );
    if (!res.ok) throw new Error(`AuthCode answered ${res.status}`);
  }
  // The dispatcher sends them (log provider) before it stops.
  await new Promise((r) => setTimeout(r, 500));
  await stopProcess(server.child);

  const db = new SQLite(path.join(dataDir, 'school-messaging.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -8000');
  const call = db.prepare('SELECT * FROM calls ORDER BY id DESC LIMIT 1').get();
  const delivery = db.prepare('SELECT * FROM deliveries ORDER BY id DESC LIMIT 1').get();
  if (!call || !delivery) throw new Error('the server recorded no AuthCode with its delivery');
  delete call.id;
  delete delivery.id;
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
  let key = 0;
  const record = db.transaction((n) => {
    const claimed = [];
    for (let i = 0; i < n; i++) {
      const now = Date.now();
      const callId = insertCall.run({ ...call, at: now }).lastInsertRowid;
      const deliveryId = insertDelivery.run({
        ...delivery,
        call_id: callId,
        status: 'sending',
        idempotency_key: `bench-${key++}`,
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

  console.log(`SQLite work per AuthCode call by group-commit size (${total} calls each, NORMAL):`);
  const rows = [];
  for (const size of [1, 10, 30, 100]) {
    const start = process.hrtime.bigint();
    for (let done = 0; done < total; done += size) finish(record(size));
    const us = Number(process.hrtime.bigint() - start) / 1000 / total;
    rows.push({ size, us });
    console.log(`  batches of ${String(size).padStart(3)}: ${us.toFixed(1).padStart(6)} µs per call`);
  }
  const [, ten, , hundred] = rows;
  console.log(`  batches of 100 cost ${(hundred.us / ten.us).toFixed(2)} × what batches of 10 cost per call`);
  db.close();
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
