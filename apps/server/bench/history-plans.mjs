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
const PAGE_DELIVERIES = (n) =>
  `select "call_id", "status", "provider", "attempts" from "deliveries" where "call_id" in (${Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', ')})`;

/** The statements: a name, the SQL and its parameters (some from the rows an earlier one read). */
function statements({ now, dayStart, callId }) {
  const DAY = 86_400_000;
  return [
    {
      name: 'History list, no filter: the page (routes/api/calls.ts → history.search)',
      sql: `select ${SUMMARY} from "calls" order by "at" desc, "id" desc limit $1`,
      params: () => [51],
      keep: true,
    },
    {
      name: "History list, no filter: the page's deliveries (withDeliveries → outbox.deliveries.ofCalls)",
      sql: PAGE_DELIVERIES(50),
      params: (kept) => kept.slice(0, 50).map((r) => r.id),
    },
    {
      name: 'History list, operation=AuthCode and one day (UTC)',
      sql: `select ${SUMMARY} from "calls" where "operation" = $1 and "at" >= $2 and "at" < $3 order by "at" desc, "id" desc limit $4`,
      params: () => ['AuthCode', dayStart, dayStart + DAY, 51],
    },
    {
      name: 'A call by id (GET /api/calls/:id → history.findById)',
      sql: 'select * from "calls" where "id" = $1',
      params: () => [callId],
    },
    {
      name: "A call by id: its deliveries (the call page's, outbox.deliveries.ofCalls)",
      sql: PAGE_DELIVERIES(1),
      params: () => [callId],
    },
    {
      name: "Free text (pg-search.ts): a chunk of 64 keys after the newest call, each call's text tested",
      sql: `select "chunk"."id" as "id", "chunk"."at" as "at", (lower("c"."params" COLLATE "C") LIKE $1 OR lower("c"."request" COLLATE "C") LIKE $2 OR lower("c"."response" COLLATE "C") LIKE $3) as "hit" from (select "id", "at" from "calls" where ("at", "id") < ($4, $5) order by "at" desc, "id" desc limit $6) as "chunk" inner join "calls" as "c" on "c"."id" = "chunk"."id" order by "chunk"."at" desc, "chunk"."id" desc`,
      params: () => ['%no-such-text%', '%no-such-text%', '%no-such-text%', now + 1, 0, 64],
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
  const time = (what) =>
    lines.map((l) => new RegExp(`${what} Time: ([\\d.]+) ms`).exec(l)?.[1]).find(Boolean);
  return (
    `${scans.length} partition scans in the plan, ${scans.length - never} executed` +
    `${removed ? `, ${removed} pruned at execution` : ''}; planning ${time('Planning')} ms, execution ${time('Execution')} ms`
  );
}

/**
 * Explains each statement on `url`'s database into `file`; answers a summary line per plan.
 * `now`: the newest call's time; `dayStart`: the day the list's day filter picks.
 */
export async function explainHistory(url, { now, dayStart, callId, file, heading }) {
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
    let kept = [];
    for (const s of statements({ now, dayStart, callId })) {
      const params = s.params(kept);
      const warm = await client.query(s.sql, params);
      if (s.keep) kept = warm.rows;
      const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${s.sql}`, params);
      const lines = rows.map((r) => r['QUERY PLAN']);
      const summary = summarize(lines);
      summaries.push(`${s.name}: ${summary}`);
      out.push(
        `== ${s.name}`,
        `-- ${summary}`,
        s.sql,
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
