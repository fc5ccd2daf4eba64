// Whether a provider refuses (outbox/provider-health.ts), read on PostgreSQL with BENCH_ATTEMPTS
// attempts recorded (2 M by default; the SMS primary's, a push every 100th, its newest 20 refused
// with 403): EXPLAIN (ANALYZE, BUFFERS) of the read's statement, as the server sends it, and
// GET /api/service (which runs it) timed on the built server, before and after the seed.
// Usage: pnpm --filter @school/server build && node apps/server/bench/provider-health.mjs
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { connectAdmin, createDatabase } from './pg.mjs';
import { startProcess, stopAll } from './server-process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ATTEMPTS = Number(process.env.BENCH_ATTEMPTS ?? 2_000_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const ADMIN = { ADMIN_USERNAME: 'bench', ADMIN_PASSWORD: 'bench password 1' };

/** The statement of `recentOutcomes` (Kysely's text) with its parameters: SCAN, three ids, RUN_MAX. */
const RECENT = `select * from (select "id", "provider", "started_at", "finished_at", "outcome", "status", row_number() over(partition by "provider" order by "id" desc) as "n" from (select "id", "provider", "started_at", "finished_at", "outcome", "status" from "delivery_attempts" order by "id" desc limit $1) as "recent" where "outcome" is not null and "provider" in ($2, $3, $4)) as "ranked" where "n" <= $5 order by "provider", "id" desc`;
const PARAMS = [1000, 'http', 'log', 'log', 50];

async function timeService(url, cookie) {
  const times = [];
  let body;
  for (let i = 0; i < SAMPLES; i++) {
    const start = performance.now();
    const res = await fetch(`${url}/api/service`, { headers: { cookie } });
    body = await res.json();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(2);
  return { p50: at(0.5), p95: at(0.95), refusing: body.providers.sms.refusing };
}

const admin = await connectAdmin();
if (!admin.client) throw new Error(`PostgreSQL cannot be used: ${admin.reason}`);
const db = await createDatabase(admin.client);
try {
  const { url } = await startProcess(
    path.join(here, '../dist/server.js'),
    {
      ...ADMIN,
      DATABASE_URL: db.url,
      SMS_PROVIDER: 'http',
      // Nothing is sent: the bench records attempts itself.
      SMS_HTTP_URL: 'http://127.0.0.1:9/send',
      SMS_HTTP_BODY: 'to={to}&text={text}',
    },
    { readyPath: '/readyz' },
  );
  const login = await fetch(`${url}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ username: ADMIN.ADMIN_USERNAME, password: ADMIN.ADMIN_PASSWORD }),
  });
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0];
  const empty = await timeService(url, cookie);

  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const now = Date.now();
  // Over the last 20 minutes: the current partition.
  await client.query(
    `INSERT INTO delivery_attempts (delivery_id, provider, started_at, finished_at, outcome, status, error, response)
     SELECT g, CASE WHEN g % 100 = 0 THEN 'log' ELSE 'http' END,
       $1::bigint - ($2::bigint - g) * 1200000 / $2::bigint, $1::bigint - ($2::bigint - g) * 1200000 / $2::bigint + 50,
       CASE WHEN g > $2::bigint - 20 THEN 'permanent' ELSE 'sent' END,
       CASE WHEN g > $2::bigint - 20 THEN 403 END,
       CASE WHEN g > $2::bigint - 20 THEN 'SMS gateway refused the message: account suspended (HTTP 403)' END,
       CASE WHEN g > $2::bigint - 20 THEN '{"error":"account suspended"}' ELSE 'HTTP 200: {"id":"x"}' END
     FROM generate_series(1, $2::bigint) g`,
    [now, ATTEMPTS],
  );
  await client.query('VACUUM ANALYZE delivery_attempts');
  await client.query(RECENT, PARAMS);
  const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${RECENT}`, PARAMS);
  await client.end();
  const seeded = await timeService(url, cookie);

  console.log(`EXPLAIN (ANALYZE, BUFFERS) with ${ATTEMPTS} attempts:`);
  console.log(plan.rows.map((r) => `  ${r['QUERY PLAN']}`).join('\n'));
  console.log(`GET /api/service, ${SAMPLES} one after another (ms):`);
  console.log(`  no attempts:       p50 ${empty.p50}, p95 ${empty.p95}`);
  console.log(`  ${ATTEMPTS} attempts: p50 ${seeded.p50}, p95 ${seeded.p95}`);
  console.log(`  refusing: ${JSON.stringify(seeded.refusing)}`);
} finally {
  await stopAll();
  await db.drop();
  await admin.client.end();
}
