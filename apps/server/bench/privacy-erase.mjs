// How long erasing a parent's number takes (docs/security.md#a-parents-phone-number-report-and-erasure):
// BENCH_CALLS (1 000 000) calls over 30 days, of which BENCH_NUMBER_CALLS (1 000) are AuthCodes to
// the number (its phone column set, each with an SMS and its attempt) and as many again mention it
// in their texts only (calls recorded before calls kept their phone, the number written with
// dashes), then `pnpm admin erase-phone` (the built dist/admin.js) on it; its own `tookMs` is
// printed: finding the calls (the phone's index, and History's free-text search through every
// call), the one transaction, and the checkpoint (SQLite) or the VACUUMs (PostgreSQL); beside it
// the `privacy-report` command's whole run (finding alone, with the process's start). BENCH_DB:
// `sqlite` (default), `postgres` (a fresh database, bench/pg.mjs; calls partitioned by month, the
// server's default), or `both`. Not in `pnpm bench`: a few minutes at a million calls.
//   node build.mjs && node bench/privacy-erase.mjs
//   BENCH_CALLS=100000 BENCH_DB=both node bench/privacy-erase.mjs
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { connectAdmin, createDatabase } from './pg.mjs';
import { CALL_COLUMNS, OPS, seedCallsPostgres } from './seed-calls.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ADMIN = path.join(here, '..', 'dist', 'admin.js');
const total = Number(process.env.BENCH_CALLS ?? 1_000_000);
const numberCalls = Number(process.env.BENCH_NUMBER_CALLS ?? 1000);
const which = process.env.BENCH_DB ?? 'sqlite';
const DAY = 86_400_000;
const SPAN = 30 * DAY;
const PHONE = '+447458913276';
const KEY = Buffer.alloc(32, 9).toString('base64');

/** `pnpm admin` with `env`; answers its parsed JSON output. */
function admin(args, env) {
  const res = spawnSync(process.execPath, [ADMIN, ...args], {
    env: { PATH: process.env.PATH ?? '', DEFAULT_PHONE_REGION: 'GB', CODE_ENCRYPTION_KEY: KEY, ...env },
    encoding: 'utf8',
    maxBuffer: 512 * 1024 * 1024,
  });
  if (res.status !== 0) throw new Error(`pnpm admin ${args.join(' ')}: ${res.status} ${res.stderr}`);
  return JSON.parse(res.stdout);
}

/** The number's own calls: every `step`-th call; half of them its AuthCodes, half mentions. */
const step = Math.max(1, Math.floor(total / (2 * numberCalls)));
const isNumbers = (i) => i % step === 0 && i / step < 2 * numberCalls;
const ownCode = (i) => (i / step) % 2 === 0;

async function sqlite() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'privacy-bench-'));
  try {
    // Made and migrated by the command itself.
    admin(['privacy-report', '--phone', PHONE], { DATA_DIR: dir });
    const db = new Database(path.join(dir, 'school-messaging.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    const from = Date.now() - SPAN;
    const insertCall = db.prepare(
      `INSERT INTO calls (${CALL_COLUMNS}) VALUES (@at, @group, @op, 'soap11', @ip, 'ksoap2-android/2.6.0+',
        @params, 'ok', 200, NULL, 1.2, @request, 300, @response, 200, @phone)`,
    );
    const insertDelivery = db.prepare(
      `INSERT INTO deliveries (call_id, kind, provider, recipient, payload, status, attempts, next_attempt_at,
        idempotency_key, created_at, updated_at) VALUES (?, 'sms', 'http', ?, '{"maskedText":"Your code is ***"}',
        'sent', 1, ?, ?, ?, ?)`,
    );
    const insertAttempt = db.prepare(
      `INSERT INTO delivery_attempts (delivery_id, provider, started_at, finished_at, outcome, response)
       VALUES (?, 'http', ?, ?, 'sent', ?)`,
    );
    const started = performance.now();
    const seed = db.transaction((first, last) => {
      for (let i = first; i < last; i++) {
        const [group, op] = OPS[i % 5];
        const at = from + Math.floor((i / total) * SPAN);
        let phone = `+4479111${String(i % 100000).padStart(5, '0')}`;
        let column = op === 'AuthCode' ? phone : null;
        const mine = isNumbers(i);
        if (mine) {
          phone = ownCode(i) ? PHONE : '07458-913-276';
          column = ownCode(i) ? PHONE : null;
        }
        const info = insertCall.run({
          at,
          group: mine ? 'AuthCodeSending' : group,
          op: mine ? 'AuthCode' : op,
          ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
          params: JSON.stringify({ code: '***', phone }),
          request: `POST /${group}.asmx HTTP/1.1\r\nContent-Type: text/xml; charset=utf-8\r\n\r\n<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><${op} xmlns="http://tempuri.org/"><code>***</code><phone>${phone}</phone></${op}></soap:Body></soap:Envelope>`,
          response: `HTTP/1.1 200\r\nContent-Type: text/xml; charset=utf-8\r\n\r\n<soap:Envelope><soap:Body><${op}Response xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>`,
          phone: column,
        });
        if (mine && ownCode(i)) {
          const d = insertDelivery.run(info.lastInsertRowid, PHONE, at, `key-${i}`, at, at);
          insertAttempt.run(d.lastInsertRowid, at, at + 120, JSON.stringify({ to: PHONE, id: `m${i}` }));
        }
      }
    });
    for (let i = 0; i < total; i += 50_000) seed(i, Math.min(total, i + 50_000));
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const seededS = (performance.now() - started) / 1000;
    const size = fs.statSync(path.join(dir, 'school-messaging.db')).size;
    const reportS = timed(() => admin(['privacy-report', '--phone', PHONE], { DATA_DIR: dir }));
    const erased = admin(['erase-phone', '--phone', '07458 913276', '--json'], { DATA_DIR: dir });
    print('sqlite', seededS, size, reportS, erased);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres() {
  const connected = await connectAdmin();
  if (!connected.client) {
    console.log(`postgres: skipped (${connected.reason})`);
    return;
  }
  const database = await createDatabase(connected.client);
  try {
    admin(['privacy-report', '--phone', PHONE], { DATABASE_URL: database.url });
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const from = Date.now() - SPAN;
    const started = performance.now();
    for (let first = 0; first < total; first += 200_000)
      await seedCallsPostgres(client, {
        total,
        from,
        span: SPAN,
        first,
        count: Math.min(200_000, total - first),
      });
    // The number's calls: every step-th call made one of its AuthCodes or a mention.
    await client.query(
      `UPDATE calls SET operation = 'AuthCode', group_name = 'AuthCodeSending',
         phone = CASE WHEN (id - 1) / $1 % 2 = 0 THEN $2 END,
         params = '{"code":"***","phone":"' || CASE WHEN (id - 1) / $1 % 2 = 0 THEN $2 ELSE '07458-913-276' END || '"}',
         request = replace(request, '<phone>' || (params::json->>'phone') || '</phone>',
           '<phone>' || CASE WHEN (id - 1) / $1 % 2 = 0 THEN $2 ELSE '07458-913-276' END || '</phone>')
       WHERE (id - 1) % $1 = 0 AND (id - 1) / $1 < $3`,
      [step, PHONE, 2 * numberCalls],
    );
    await client.query(
      `INSERT INTO deliveries (call_id, kind, provider, recipient, payload, status, attempts, next_attempt_at,
         idempotency_key, created_at, updated_at)
       SELECT id, 'sms', 'http', $1, '{"maskedText":"Your code is ***"}', 'sent', 1, at, 'key-' || id, at, at
       FROM calls WHERE phone = $1`,
      [PHONE],
    );
    await client.query(
      `INSERT INTO delivery_attempts (delivery_id, provider, started_at, finished_at, outcome, response)
       SELECT id, 'http', created_at, created_at + 120, 'sent', '{"to":"' || recipient || '"}'
       FROM deliveries WHERE recipient = $1`,
      [PHONE],
    );
    await client.query('VACUUM (ANALYZE)');
    await client.query('CHECKPOINT');
    const seededS = (performance.now() - started) / 1000;
    const { rows } = await client.query('SELECT pg_database_size(current_database()) AS size');
    await client.end();
    const reportS = timed(() => admin(['privacy-report', '--phone', PHONE], { DATABASE_URL: database.url }));
    const erased = admin(['erase-phone', '--phone', '07458 913276', '--json'], {
      DATABASE_URL: database.url,
    });
    print('postgres', seededS, Number(rows[0].size), reportS, erased);
  } finally {
    await database.drop();
    await connected.client.end();
  }
}

/** Seconds `run` took. */
function timed(run) {
  const started = performance.now();
  run();
  return (performance.now() - started) / 1000;
}

function print(dialect, seededS, size, reportS, erased) {
  console.log(
    `${dialect}: ${total} calls (${(size / 1e6).toFixed(0)} MB, seeded in ${seededS.toFixed(0)} s), ` +
      `the number in ${2 * numberCalls}: reported in ${reportS.toFixed(2)} s (the whole command), ` +
      `erased in ${(erased.tookMs / 1000).toFixed(2)} s — ` +
      `${erased.calls} calls, ${erased.deliveries} deliveries, ${erased.attempts} attempts; ` +
      (erased.disk.walTruncated === null
        ? `VACUUMed ${erased.disk.vacuumed.length} tables`
        : `WAL truncated: ${erased.disk.walTruncated}`) +
      ` (load average ${os.loadavg()[0].toFixed(1)})`,
  );
}

if (!fs.existsSync(ADMIN)) {
  console.log('Build first: node build.mjs');
  process.exit(1);
}
if (which === 'sqlite' || which === 'both') await sqlite();
if (which === 'postgres' || which === 'both') await postgres();
