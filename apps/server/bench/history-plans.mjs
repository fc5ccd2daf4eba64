// bench/history.mjs's BENCH_PLANS: EXPLAIN (ANALYZE, BUFFERS) of the SQL History runs, on the
// seeded PostgreSQL database, written to a file with a line per plan on how many partitions it
// read. The statements are the server's as its log shows them (log_min_duration_statement = 0):
// Kysely's text, sent as an unnamed statement with its parameters, so planned with their values,
// as here. Each runs once before it is explained: the plan is of a warm cache, as a server's.
import fs from 'node:fs';
import os from 'node:os';
import pg from 'pg';

const SUMMARY =
  '"id", "at", "group_name", "operation", "binding", "caller_ip", "user_agent", "params", "outcome", "status", "error", "duration_ms", "request_bytes", "response_bytes", "note", "request_id"';
/** A page's deliveries (outbox/deliveries.ts ofCalls): by call id, queued no earlier than the oldest call. */
const pageDeliveries = (rows) => ({
  sql: `select "call_id", "status", "provider", "attempts" from "deliveries" where "call_id" in (${rows.map((_, i) => `$${i + 1}`).join(', ')}) and "created_at" >= $${rows.length + 1}`,
  params: [...rows.map((r) => r.id), Math.min(...rows.map((r) => Number(r.at)))],
});
const TEXT_HIT =
  '(lower("c"."params" COLLATE "C") LIKE $1 OR lower("c"."request" COLLATE "C") LIKE $2 OR lower("c"."response" COLLATE "C") LIKE $3)';
const NO_MATCH = '%no-such-text%';

/**
 * The first time windows of a newest-first read with no filter (history/time-windows.ts): the
 * current period and after, then 1, 2, 4, 8, 16 periods back; [from, to), to null for "and after".
 */
function firstWindows(now, periodStart) {
  const out = [[periodStart(now), null]];
  let span = 1;
  for (let i = 0; i < 5; i++) {
    const to = out[out.length - 1][0];
    let from = to;
    for (let j = 0; j < span; j++) from = periodStart(from - 1);
    out.push([from, to]);
    span *= 2;
  }
  return out;
}

/**
 * The statements, in order: a name, the SQL and its parameters, from the rows the last one with
 * `keep` read and the 64th newest call. The list's windows are read until a page (51) is had;
 * a `page` statement is the deliveries of the rows before it.
 */
function statements({ windows, dayStart }) {
  const DAY = 86_400_000;
  const list = windows.map(([from, to], i) => ({
    name: `History list, no filter: time window ${i + 1} (${new Date(from).toISOString()} to ${to === null ? 'now' : new Date(to).toISOString()})`,
    sql: `select ${SUMMARY} from "calls" where "at" >= $1${to === null ? '' : ' and "at" < $2'} order by "at" desc, "id" desc limit $${to === null ? 2 : 3}`,
    params: () => (to === null ? [from, 51] : [from, to, 51]),
    gather: true,
  }));
  return [
    ...list,
    {
      name: "History list, no filter: the page's deliveries (routes/api/call-mapping.ts withDeliveries)",
      page: true,
    },
    {
      name: 'History list, operation=AuthCode and one day (UTC): its one time window',
      sql: `select ${SUMMARY} from "calls" where "operation" = $1 and "at" >= $2 and "at" < $3 order by "at" desc, "id" desc limit $4`,
      params: () => ['AuthCode', dayStart, dayStart + DAY, 51],
      keep: true,
    },
    { name: "History list, operation=AuthCode and one day: the page's deliveries", page: true },
    {
      name: 'A call by id (GET /api/calls/:id, history.findById), the first of the day above',
      sql: 'select * from "calls" where "id" = $1',
      params: (rows) => [rows[0].id],
      keep: true,
    },
    { name: "A call by id: its deliveries (the call page's)", page: true },
    {
      name: "Free text (history/pg-search.ts): the first chunk, 64 keys of today's window, each call's text tested",
      sql: `select "chunk"."id" as "id", "chunk"."at" as "at", ${TEXT_HIT} as "hit" from (select "id", "at" from "calls" where "at" >= $4 order by "at" desc, "id" desc limit $5) as "chunk" inner join "calls" as "c" on "c"."id" = "chunk"."id" and "c"."at" = "chunk"."at" order by "chunk"."at" desc, "chunk"."id" desc`,
      params: () => [NO_MATCH, NO_MATCH, NO_MATCH, windows[0][0], 64],
    },
    {
      name: "Free text: the second chunk, 128 keys after the first's 64, in the same window",
      sql: `select "chunk"."id" as "id", "chunk"."at" as "at", ${TEXT_HIT} as "hit" from (select "id", "at" from "calls" where "at" >= $4 and ("at", "id") < ($5, $6) order by "at" desc, "id" desc limit $7) as "chunk" inner join "calls" as "c" on "c"."id" = "chunk"."id" and "c"."at" = "chunk"."at" order by "chunk"."at" desc, "chunk"."id" desc`,
      params: (_rows, newest) => [NO_MATCH, NO_MATCH, NO_MATCH, windows[0][0], newest.at, newest.id, 128],
    },
  ];
}

/** What a plan in text read: partitions scanned (and not), planning and execution time. */
export function summarize(lines) {
  const scans = lines.filter((l) =>
    /Scan.* on (calls|deliveries|delivery_attempts)_(p\d{8}|default)\b/.test(l),
  );
  const never = scans.filter((l) => l.includes('(never executed)')).length;
  const removed = lines
    .map((l) => /Subplans Removed: (\d+)/.exec(l)?.[1])
    .filter(Boolean)
    .reduce((sum, n) => sum + Number(n), 0);
  const join = lines.map((l) => /(Nested Loop|Hash Join|Merge Join)/.exec(l)?.[1]).find(Boolean);
  const time = (what) =>
    lines.map((l) => new RegExp(`${what} Time: ([\\d.]+) ms`).exec(l)?.[1]).find(Boolean);
  return (
    `${scans.length} partition scans in the plan, ${scans.length - never} executed` +
    `${removed ? `, ${removed} pruned at execution` : ''}${join ? `, ${join}` : ''}; planning ${time('Planning')} ms, execution ${time('Execution')} ms`
  );
}

/**
 * Explains each statement on `url`'s database into `file`; answers a summary line per plan.
 * `periodStart`: the start of the partition period holding a time; `dayStart`: the day the day
 * filter picks (the list's and the call page's).
 */
export async function explainHistory(url, { periodStart, dayStart, file, heading }) {
  const windows = firstWindows(Date.now(), periodStart);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const out = [
    `${heading}`,
    `${new Date().toISOString()}, load average ${fs.readFileSync('/proc/loadavg', 'utf8').trim()}, ${os.cpus().length} CPUs`,
    '',
  ];
  const summaries = [];
  try {
    const { rows: partitions } = await client.query(
      `SELECT i.inhparent::regclass::text AS t, count(*)::int AS n FROM pg_inherits i
       WHERE i.inhparent IN ('calls'::regclass, 'deliveries'::regclass, 'delivery_attempts'::regclass)
       GROUP BY 1 ORDER BY 1`,
    );
    out.push(`partitions (with the default one): ${partitions.map((p) => `${p.t} ${p.n}`).join(', ')}`, '');
    // The 64th newest call, where the free text's second chunk starts.
    const newest = (
      await client.query('SELECT at, id FROM calls ORDER BY at DESC, id DESC OFFSET 63 LIMIT 1')
    ).rows[0];
    newest.at = Number(newest.at);
    let kept = [];
    let gathered = [];
    for (const s of statements({ windows, dayStart })) {
      if (s.gather && gathered.length >= 51) continue;
      // A page's deliveries: of the rows the list gathered (its windows) or kept, 50 at most.
      const page = s.page ? pageDeliveries((gathered.length > 0 ? gathered : kept).slice(0, 50)) : null;
      if (s.page) gathered = [];
      const sql = page ? page.sql : s.sql;
      const params = page ? page.params : s.params(kept, newest);
      const warm = await client.query(sql, params);
      if (s.keep) kept = warm.rows;
      if (s.gather) gathered.push(...warm.rows);
      const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
      const lines = rows.map((r) => r['QUERY PLAN']);
      const summary = summarize(lines);
      summaries.push(`${s.name}: ${warm.rows.length} rows; ${summary}`);
      out.push(
        `== ${s.name}`,
        `-- ${warm.rows.length} rows; ${summary}`,
        sql,
        `-- parameters: ${JSON.stringify(params)}`,
        ...lines,
        '',
      );
    }
  } finally {
    await client.end();
  }
  fs.writeFileSync(file, `${out.join('\n')}\n`);
  return summaries;
}

/**
 * The statements that read deliveries and attempts through an index of the write path, outside
 * History's lists (which history.mjs times through the API: BENCH_FILTERS, BENCH_WITHOUT): each
 * timed `runs` times with every index, then with the index it reads dropped in a transaction that
 * is rolled back (the files stay). On PostgreSQL `$n` parameters, on SQLite `?`; `index`: the one
 * dropped, by database (where another index may take its place, the plan says which).
 */
const OUTBOX_STATEMENTS = (now) => [
  {
    name: 'claim: pending SMS due, oldest first (outbox/sql-claims.ts)',
    index: { postgres: 'deliveries_due', sqlite: 'deliveries_due' },
    sql: `SELECT id FROM deliveries WHERE status IN ('pending') AND created_at >= $1 AND kind = 'sms'
      AND provider IN ('http') AND next_attempt_at <= $2 AND (expires_at IS NULL OR expires_at > $2)
      ORDER BY next_attempt_at, id LIMIT 32`,
    params: [now - 3_600_000, now],
    sqlite: `SELECT id FROM deliveries WHERE status IN (?) AND kind = 'sms'
      AND provider IN ('http') AND next_attempt_at <= ? AND (expires_at IS NULL OR expires_at > ?)
      ORDER BY next_attempt_at, id LIMIT 32`,
    sqliteParams: ['pending', now, now],
  },
  {
    name: "/metrics' due deliveries (outbox/deliveries.ts outbox)",
    index: { postgres: 'deliveries_due', sqlite: 'deliveries_due' },
    sql: `SELECT count(*), min(next_attempt_at) FROM deliveries WHERE status = $1 AND next_attempt_at <= $2`,
    params: ['pending', now],
    sqliteParams: ['pending', now],
  },
  {
    name: "a provider's status callback: the delivery by its message id, the last 3 days (deliveries.ts recordProviderStatus)",
    index: { postgres: 'deliveries_provider_id', sqlite: 'deliveries_provider_id' },
    sql: `UPDATE deliveries SET provider_status = 'delivered', updated_at = $2
      WHERE provider_id = $1 AND provider = $4 AND created_at >= $3`,
    params: ['SM-bench-7', now, now - 3 * 86_400_000, 'twilio'],
    sqliteParams: [now, 'SM-bench-7', 'twilio', now - 3 * 86_400_000],
    sqlite: `UPDATE deliveries SET provider_status = 'delivered', updated_at = ?
      WHERE provider_id = ? AND provider = ? AND created_at >= ?`,
    prepare: 'providerIds',
  },
  {
    name: "a delivery's attempts, its page (deliveries.ts attemptsOf)",
    index: { postgres: 'delivery_attempts_delivery', sqlite: 'delivery_attempts_delivery' },
    sql: 'SELECT * FROM delivery_attempts WHERE delivery_id = $1 ORDER BY id',
    params: [777],
    sqliteParams: [777],
    prepare: 'attempts',
  },
  {
    name: "a number's SMS, its erasure (outbox/erasure.ts)",
    index: { postgres: 'deliveries_recipient', sqlite: 'deliveries_recipient' },
    sql: 'SELECT * FROM deliveries WHERE recipient = $1',
    params: ['+447458913276'],
    sqliteParams: ['+447458913276'],
  },
  {
    name: "a number's SMS of the last 15 minutes, AuthCode's limit (deliveries.ts recentSms, SQLite's start)",
    index: { postgres: 'deliveries_recipient', sqlite: 'deliveries_recipient' },
    sql: `SELECT created_at FROM deliveries WHERE kind = 'sms' AND recipient = $1 AND created_at >= $2
      ORDER BY created_at DESC LIMIT 5`,
    params: ['+447458913276', now - 900_000],
    sqliteParams: ['+447458913276', now - 900_000],
  },
];

/**
 * What the statements need that the seed lacks, made once: every delivery's attempt, and one
 * delivery in ten of the last 3 days sent through `twilio` with a message id (`SM-bench-<id>`).
 */
async function prepareRows(run, what, now) {
  if (what === 'attempts') {
    const [{ n }] = await run('SELECT count(*) AS n FROM delivery_attempts');
    if (Number(n) > 0) return;
    await run(`INSERT INTO delivery_attempts (delivery_id, provider, started_at, finished_at, outcome, status, response)
      SELECT id, provider, created_at, created_at + 120, 'sent', 200, 'ok' FROM deliveries ORDER BY id`);
  } else {
    const [{ n }] = await run("SELECT count(*) AS n FROM deliveries WHERE provider = 'twilio'");
    if (Number(n) > 0) return;
    await run(
      `UPDATE deliveries SET provider = 'twilio', provider_id = 'SM-bench-' || id
       WHERE created_at >= ${now - 3 * 86_400_000} AND id % 10 = 7`,
    );
  }
}

/**
 * Times OUTBOX_STATEMENTS on a PostgreSQL URL or an SQLite file, with every index and each
 * statement's index dropped (rolled back); answers a line per statement.
 */
export async function timeOutboxStatements(target, { runs = 60 } = {}) {
  const postgres = target.startsWith('postgres');
  let run;
  let close;
  if (postgres) {
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    run = async (text, params = []) => (await client.query(text, params)).rows;
    close = () => client.end();
  } else {
    const { default: SQLite } = await import('better-sqlite3');
    const db = new SQLite(target);
    run = async (text, params = []) => {
      const statement = db.prepare(text);
      return statement.reader ? statement.all(...params) : [statement.run(...params)];
    };
    close = async () => db.close();
  }
  const [{ now }] = await run('SELECT max(created_at) AS now FROM deliveries');
  const at = Number(now);
  const lines = [];
  try {
    for (const s of OUTBOX_STATEMENTS(at)) {
      if (s.prepare) await prepareRows(run, s.prepare, at);
      if (postgres) await run('VACUUM (ANALYZE) deliveries, delivery_attempts');
      const text = postgres ? s.sql : (s.sqlite ?? s.sql.replace(/\$\d+/g, '?'));
      const params = postgres ? s.params : s.sqliteParams;
      const index = s.index[postgres ? 'postgres' : 'sqlite'];
      const time = async () => {
        await run('BEGIN');
        try {
          const times = [];
          for (let i = 0; i < runs + 3; i++) {
            const t = performance.now();
            await run(text, params);
            if (i >= 3) times.push(performance.now() - t);
          }
          times.sort((a, b) => a - b);
          return { p50: times[Math.floor(runs / 2)], p95: times[Math.floor(runs * 0.95)] };
        } finally {
          await run('ROLLBACK');
        }
      };
      const exists = postgres
        ? (await run('SELECT to_regclass($1) IS NOT NULL AS there', [index]))[0].there
        : (await run("SELECT count(*) AS n FROM sqlite_master WHERE type = 'index' AND name = ?", [index]))[0]
            .n > 0;
      const withIt = await time();
      const f = (m) => `${m.p50.toFixed(2)} / ${m.p95.toFixed(2)} ms`;
      if (!exists) {
        lines.push(`${s.name}: no ${index} (read without it) ${f(withIt)} (p50 / p95)`);
        console.log(lines[lines.length - 1]);
        continue;
      }
      // Dropped in the timed transaction itself: rolled back with it.
      const timeWithout = async () => {
        await run('BEGIN');
        try {
          await run(`DROP INDEX ${index}`);
          const times = [];
          for (let i = 0; i < Math.min(runs, 20) + 1; i++) {
            const t = performance.now();
            await run(text, params);
            if (i >= 1) times.push(performance.now() - t);
          }
          times.sort((a, b) => a - b);
          return { p50: times[Math.floor(times.length / 2)], p95: times[Math.floor(times.length * 0.95)] };
        } finally {
          await run('ROLLBACK');
        }
      };
      const without = await timeWithout();
      lines.push(`${s.name}: through ${index} ${f(withIt)}; without it ${f(without)} (p50 / p95)`);
      console.log(lines[lines.length - 1]);
    }
  } finally {
    await close();
  }
  return lines;
}

// node bench/history-plans.mjs <postgres://… | an SQLite file>: the outbox's statements timed.
if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const target = process.argv[2];
  if (!target) throw new Error('usage: node bench/history-plans.mjs <postgres URL | SQLite file>');
  console.log(`load average ${fs.readFileSync('/proc/loadavg', 'utf8').trim()}, ${target}`);
  await timeOutboxStatements(target, { runs: Number(process.env.BENCH_SAMPLES ?? 60) });
}
