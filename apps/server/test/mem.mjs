// test/mem.bench-tmp.ts

// src/store/calls.ts
import { EventEmitter } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sql } from 'kysely';

var COLUMNS = [
  'at',
  'group_name',
  'operation',
  'binding',
  'caller_ip',
  'user_agent',
  'params',
  'outcome',
  'status',
  'error',
  'duration_ms',
  'request',
  'request_bytes',
  'response',
  'response_bytes',
];
var SUMMARY_COLUMNS = [
  'id',
  'at',
  'group_name',
  'operation',
  'binding',
  'caller_ip',
  'user_agent',
  'params',
  'outcome',
  'status',
  'error',
  'duration_ms',
  'request_bytes',
  'response_bytes',
];
var likePattern = (text) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
function applyFilters(qb, query) {
  let out = qb;
  if (query.operation !== void 0) out = out.where('operation', '=', query.operation);
  if (query.binding !== void 0) out = out.where('binding', '=', query.binding);
  if (query.outcome !== void 0) out = out.where('outcome', '=', query.outcome);
  if (query.from !== void 0) out = out.where('at', '>=', query.from);
  if (query.to !== void 0) out = out.where('at', '<', query.to);
  if (query.ip !== void 0) out = out.where('caller_ip', '=', query.ip);
  if (query.q !== void 0 && query.q !== '') {
    const pattern = likePattern(query.q);
    out = out.where((eb) =>
      eb.or(
        ['params', 'request', 'response'].map(
          (column) => sql`${sql.ref(column)} like ${pattern} escape '\\'`,
        ),
      ),
    );
  }
  return out;
}
var after = (cursor) => (eb) => eb(eb.refTuple('at', 'id'), '<', eb.tuple(cursor.at, cursor.id));
function createCallRepository(db, sqlite) {
  let queue = [];
  const insert = sqlite.prepare(
    `INSERT INTO calls (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})`,
  );
  const insertAll = sqlite.transaction((calls) =>
    calls.map((call) => Number(insert.run(call).lastInsertRowid)),
  );
  const events = new EventEmitter();
  events.setMaxListeners(0);
  function commit(batch) {
    let ids;
    try {
      ids = insertAll(batch.map((p) => p.call));
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(ids[i]);
    if (events.listenerCount('recorded') > 0) {
      events.emit(
        'recorded',
        batch.map(({ call }, i) => ({ ...call, id: ids[i] })),
      );
    }
  }
  let timer;
  function commitQueued() {
    timer = void 0;
    const batch = queue;
    queue = [];
    commit(batch);
  }
  return {
    record(call) {
      return new Promise((resolve, reject) => {
        queue.push({ call, resolve, reject });
        timer ??= setImmediate(commitQueued);
      });
    },
    async flush() {
      if (timer) {
        clearImmediate(timer);
        commitQueued();
      }
    },
    events,
    findById(id) {
      return db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirst();
    },
    search(query, page) {
      let qb = applyFilters(db.selectFrom('calls').select(SUMMARY_COLUMNS), query);
      if (page.after) qb = qb.where(after(page.after));
      return qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(page.limit).execute();
    },
    async *scan(query, batchSize = 500) {
      let cursor;
      for (;;) {
        let qb = applyFilters(db.selectFrom('calls').selectAll(), query);
        if (cursor) qb = qb.where(after(cursor));
        const rows = await qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(batchSize).execute();
        if (rows.length === 0) return;
        yield rows;
        const last = rows[rows.length - 1];
        cursor = { at: last.at, id: last.id };
        if (rows.length < batchSize) return;
      }
    },
    async stats({ from, to, bucketMs }) {
      const rows = await db
        .selectFrom('calls')
        .select((eb) => [
          eb(eb(eb.ref('at'), '/', eb.val(bucketMs)), '*', eb.val(bucketMs)).as('bucket'),
          'operation',
          'outcome',
          eb.fn.countAll().as('count'),
        ])
        .where('at', '>=', from)
        .where('at', '<', to)
        .groupBy(['bucket', 'operation', 'outcome'])
        .orderBy('bucket')
        .execute();
      return rows.map((r) => ({ ...r, bucket: Number(r.bucket), count: Number(r.count) }));
    },
    list({ limit }) {
      return db.selectFrom('calls').selectAll().orderBy('id', 'desc').limit(limit).execute();
    },
    async count() {
      const row = await db
        .selectFrom('calls')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}

// src/store/db.ts
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';

// src/store/migrations.ts
var migrations = {
  '0001_calls': {
    async up(db) {
      await db.schema
        .createTable('calls')
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('group_name', 'text', (c) => c.notNull())
        .addColumn('operation', 'text')
        .addColumn('binding', 'text', (c) => c.notNull())
        .addColumn('caller_ip', 'text', (c) => c.notNull())
        .addColumn('user_agent', 'text')
        .addColumn('params', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('duration_ms', 'real', (c) => c.notNull())
        .addColumn('request', 'text', (c) => c.notNull())
        .addColumn('request_bytes', 'integer', (c) => c.notNull())
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('response_bytes', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('calls_at').on('calls').columns(['at', 'id']).execute();
      await db.schema.createIndex('calls_operation').on('calls').columns(['operation', 'id']).execute();
    },
  },
  '0002_call_filter_indexes': {
    // History lists newest first by (at, id) under one filter: each filter gets its index.
    async up(db) {
      await db.schema.dropIndex('calls_operation').execute();
      for (const column of ['operation', 'binding', 'outcome', 'caller_ip']) {
        await db.schema.createIndex(`calls_${column}_at`).on('calls').columns([column, 'at', 'id']).execute();
      }
    },
  },
};
var migrationProvider = {
  getMigrations: async () => migrations,
};

// src/store/db.ts
async function openDatabase(options) {
  fs.mkdirSync(options.dataDir, { recursive: true });
  const sqlite = new SQLite(path.join(options.dataDir, 'school-messaging.db'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma(`synchronous = ${options.synchronous}`);
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely({ dialect: new SqliteDialect({ database: sqlite }) });
  try {
    await migrate(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return { db, sqlite };
}
async function migrate(db) {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? '');
    throw new Error(`Database migration ${failed?.migrationName ?? ''} failed: ${cause}`.trim());
  }
}

// src/store/index.ts
async function openStore(options) {
  const { db, sqlite } = await openDatabase(options);
  const calls = createCallRepository(db, sqlite);
  return {
    db,
    calls,
    async ping() {
      await db.selectFrom('calls').select('id').limit(1).execute();
    },
    async close() {
      await calls.flush();
      await db.destroy();
    },
  };
}

// src/api/mapping.ts
function toSummary(row) {
  return {
    id: row.id,
    at: new Date(row.at).toISOString(),
    group: row.group_name,
    operation: row.operation,
    binding: row.binding,
    callerIp: row.caller_ip,
    userAgent: row.user_agent,
    params: row.params === null ? null : JSON.parse(row.params),
    outcome: row.outcome,
    status: row.status,
    error: row.error,
    durationMs: Math.round(row.duration_ms * 1e3) / 1e3,
  };
}
function toDetail(row) {
  return {
    ...toSummary(row),
    request: row.request,
    requestBytes: row.request_bytes,
    response: row.response,
    responseBytes: row.response_bytes,
  };
}
var CSV_COLUMNS = [
  'id',
  'at',
  'group',
  'operation',
  'binding',
  'callerIp',
  'userAgent',
  'params',
  'outcome',
  'status',
  'error',
  'durationMs',
];
var CSV_HEADER = `${CSV_COLUMNS.join(',')}\r
`;

// test/mem.bench-tmp.ts
var dir = process.argv[2];
var store = await openStore({ dataDir: dir, synchronous: 'NORMAL' });
var mb = () => (process.memoryUsage().rss / 1048576).toFixed(0);
var peak = 0;
var iv = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 20);
console.log('start', mb());
async function* json() {
  for await (const rows of store.calls.scan({}, 100))
    yield rows.map((r) => JSON.stringify(toDetail(r))).join(',\n');
}
var mode = process.argv[3];
if (mode === 'plain') {
  let n = 0;
  for await (const s of json()) n += s.length;
  console.log('chars', n);
} else {
  let n = 0;
  await pipeline(
    Readable.from(json(), { objectMode: false }),
    new Writable({
      write(c, e, cb) {
        n += c.length;
        setImmediate(cb);
      },
    }),
  );
  console.log('bytes', n);
}
clearInterval(iv);
console.log('peak', (peak / 1048576).toFixed(0), 'end', mb());
await store.close();
