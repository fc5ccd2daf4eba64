import fs from 'node:fs';
import pg from 'pg';

/** Clock ticks a second (USER_HZ): 100 on Linux. */
const TICKS_PER_SECOND = 100;

/** CPU time (user + system, in ticks) of a process, 0 once it is gone. */
function ticksOf(pid) {
  try {
    // Fields after the command's `)`: state is the 1st, utime the 12th, stime the 13th.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/**
 * The CPU the server processes of `url`'s database (its connections, on this machine) spend over
 * `seconds`, in percent of one core: what the instances on it cost their database meanwhile.
 * The connections are those open at the start (a pool keeps its own); one opened later is missed.
 */
export async function databaseCpu(url, seconds) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let pids;
  try {
    const { rows } = await client.query(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    pids = rows.map((r) => r.pid);
  } finally {
    await client.end();
  }
  const before = pids.map(ticksOf);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const spent = pids.reduce((sum, pid, i) => sum + Math.max(0, ticksOf(pid) - before[i]), 0);
  return { percent: (100 * spent) / TICKS_PER_SECOND / seconds, connections: pids.length };
}
