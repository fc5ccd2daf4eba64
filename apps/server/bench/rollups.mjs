// The Dashboard's roll-ups (stats/call-rollups.ts, stats/delivery-rollups.ts) as the benches wait
// for them: a server rolls up a seeded history in the background after it starts, which a
// measurement should not run beside.
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';

const HOUR = 3_600_000;
/** ROLLUP_GRACE_MS: an hour is rolled up this long after it ended. */
const GRACE = 5 * 60_000;

/**
 * The roll-ups' watermark, read from the store itself (`env`: DATABASE_URL, else DATA_DIR's
 * SQLite): the calls' or the deliveries' (stats/delivery-rollups.ts), whichever is behind; null
 * while none. A build from before the deliveries' roll-ups (BENCH_SERVER) has the calls' only.
 */
export async function rolledUntil(env) {
  const both = `SELECT (SELECT rolled_until FROM call_rollup_state WHERE id = 1) AS calls,
    (SELECT rolled_until FROM delivery_rollup_state WHERE id = 1) AS deliveries`;
  const callsOnly = 'SELECT rolled_until AS calls FROM call_rollup_state WHERE id = 1';
  const behind = (row) => {
    const marks = [row?.calls, ...('deliveries' in (row ?? {}) ? [row.deliveries] : [])];
    return marks.some((m) => m == null) ? null : Math.min(...marks.map(Number));
  };
  if (env.DATABASE_URL) {
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      const { rows } = await client.query(both).catch(() => client.query(callsOnly));
      return behind(rows[0]);
    } finally {
      await client.end();
    }
  }
  const db = new SQLite(path.join(env.DATA_DIR, 'school-messaging.db'), { readonly: true });
  try {
    let row;
    try {
      row = db.prepare(both).get();
    } catch {
      row = db.prepare(callsOnly).get();
    }
    return behind(row);
  } finally {
    db.close();
  }
}

/** Waits (10 minutes at most) until every hour that ended is rolled up; answers the seconds it took. */
export async function rolledUp(env) {
  const caughtUp = Math.floor((Date.now() - GRACE) / HOUR) * HOUR;
  const started = performance.now();
  while (((await rolledUntil(env)) ?? 0) < caughtUp) {
    if (performance.now() - started > 600_000) throw new Error('the roll-ups did not catch up in 10 minutes');
    await new Promise((r) => setTimeout(r, 200));
  }
  return (performance.now() - started) / 1000;
}
