import { type Kysely, sql } from 'kysely';
import type { KeptRows } from './owners.js';
import type { PartitionLayout } from './partition-layout.js';
import { isLockTimeout, LOCK_TIMEOUT_MS } from './partition-locks.js';
import type { Database } from './schema.js';

/**
 * Retiring PostgreSQL's old time partitions (partitions.ts `retire`): each period wholly before
 * retention's cutoff is detached and dropped, a table at a time, no row deleted one by one. The
 * rows the tables' owners still need (`KeptRows`: the outbox's deliveries on their way, with their
 * attempts and calls) go back into their tables first; their range has no partition any more, so
 * the default partition takes them.
 *
 * A DETACH needs its table to itself (ACCESS EXCLUSIVE): a retirement first asks without queueing
 * at all, and holds one table at a time for one statement the server runs whole.
 */

export interface Retired {
  /** The partitions dropped. */
  readonly partitions: readonly string[];
  /** The calls among their rows, as PostgreSQL estimated them (a count would read every one). */
  readonly calls: number;
  /**
   * The rows kept with their detach (`KeptRows.withDetach`: the deliveries still on their way),
   * moved to the default partition, with what was kept beside them (their calls and attempts).
   */
  readonly moved: number;
}

/** The prefix a detached partition is renamed with until it is dropped. */
const RETIRED = 'retired_';

/**
 * How long a retirement asks for its locks without waiting (NOWAIT, every NOWAIT_EVERY_MS) before
 * it waits for them in the queue, LOCK_TIMEOUT_MS at a time.
 */
const NOWAIT_MS = 10_000;
const NOWAIT_EVERY_MS = 20;

/** A name quoted as an SQL identifier (for the statement `detach` has the server run whole). */
const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** What a retirement works with: the database, and the rows its tables' owners keep. */
interface Retiring {
  readonly db: Kysely<Database>;
  readonly kept: readonly KeptRows[];
}

const keptOf = (r: Retiring, table: string) => r.kept.filter((k) => k.table === table);

/**
 * Detaches `table`'s partitions `names` and renames them RETIRED_… in one statement, run whole
 * by the server: the tables are held for the server's own few milliseconds, never for a round
 * trip to this process (a busy event loop, an instance starting, would stretch it). The rows kept
 * with their detach go back into `table` in the same statement, so that whoever reads it (the
 * dispatcher) never finds one missing. With `queue` false its locks are asked for without
 * queueing (NOWAIT).
 */
async function detach(
  r: Retiring,
  table: string,
  names: readonly string[],
  defaultName: string | undefined,
  queue: boolean,
): Promise<void> {
  // DETACH takes the table, the partition and the default partition (its bound changes).
  const locked = [table, ...names, ...(defaultName ? [defaultName] : [])];
  const statements = [
    `PERFORM set_config('lock_timeout', '${LOCK_TIMEOUT_MS}ms', true);`,
    `LOCK TABLE ${locked.map((t) => `ONLY ${ident(t)}`).join(', ')} IN ACCESS EXCLUSIVE MODE${queue ? '' : ' NOWAIT'};`,
  ];
  for (const name of names) {
    statements.push(`ALTER TABLE ${ident(table)} DETACH PARTITION ${ident(name)};`);
    statements.push(`ALTER TABLE ${ident(name)} RENAME TO ${ident(RETIRED + name)};`);
    for (const k of keptOf(r, table).filter((k) => k.withDetach))
      statements.push(`INSERT INTO ${ident(table)} SELECT * FROM ${ident(RETIRED + name)} WHERE ${k.where};`);
  }
  await sql.raw(`DO $retire$ BEGIN ${statements.join(' ')} END $retire$`).execute(r.db);
}

/**
 * Asks for `detach`'s locks without queueing every few milliseconds for NOWAIT_MS: at an instant
 * no transaction has the tables, which under a steady load comes within a few tries. A lock asked
 * for in the queue would make every call behind it wait as long as whoever holds it. The tables
 * never free at once (a long read, a load that never pauses): queued for, waiting
 * LOCK_TIMEOUT_MS at most each time.
 */
async function detachWhenFree(
  r: Retiring,
  table: string,
  names: readonly string[],
  defaultName: string | undefined,
): Promise<void> {
  const nowaitUntil = Date.now() + NOWAIT_MS;
  while (Date.now() < nowaitUntil) {
    try {
      return await detach(r, table, names, defaultName, false);
    } catch (err) {
      if (!isLockTimeout(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, NOWAIT_EVERY_MS));
    }
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await detach(r, table, names, defaultName, true);
    } catch (err) {
      if (!isLockTimeout(err) || attempt >= 20) throw err;
      // Whoever held the lock (a long read) may be done in a moment; the calls behind the
      // DETACH waited at most LOCK_TIMEOUT_MS.
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}

/**
 * Ends a detached partition of `table`: the rows still needed go back into it (the default
 * partition takes them), then the partition is dropped, in one transaction that holds only the
 * detached table; answers the rows it held that went back with its detach. A partition detached
 * and not ended (the process ended between) is ended by the next retirement.
 */
function end(r: Retiring, table: string | undefined, retired: string): Promise<number> {
  const t = sql.table(retired);
  return r.db.transaction().execute(async (trx) => {
    let moved = 0;
    for (const k of table === undefined ? [] : keptOf(r, table)) {
      if (k.withDetach) {
        // Already back with the detach (no INSERT here: they may have moved on since); counted.
        const { rows } = await sql<{ n: string }>`
          SELECT count(*)::text AS n FROM ${t} WHERE ${sql.raw(k.where)}`.execute(trx);
        moved += Number(rows[0]?.n ?? 0);
      } else {
        await sql`INSERT INTO ${sql.table(table as string)} SELECT * FROM ${t}
          WHERE ${sql.raw(k.where)}`.execute(trx);
      }
    }
    await sql`DROP TABLE ${t}`.execute(trx);
    return moved;
  });
}

/** The tables a retirement detached and did not end. */
async function detachedLeftOver(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    SELECT relname AS name FROM pg_class
    WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'
      AND starts_with(relname, ${RETIRED})`.execute(db);
  return rows.map((r) => r.name);
}

/**
 * Detaches and drops every partition of `layouts` wholly before `before`, keeping `kept`: the
 * tables with rows kept first, in the order of `kept`, then the others. LockNotAvailable when a
 * table's locks were never had (what was detached before is still ended).
 */
export async function retirePartitions(
  db: Kysely<Database>,
  kept: readonly KeptRows[],
  layouts: readonly PartitionLayout[],
  before: number,
): Promise<Retired> {
  const r: Retiring = { db, kept };
  const tables = layouts.map((l) => l.table);
  /** The table a detached partition was of (`retired_calls_p20261127`: calls). */
  const tableOf = (retired: string): string | undefined =>
    tables
      .filter((table) => retired.startsWith(`${RETIRED}${table}_`))
      .sort((a, b) => b.length - a.length)[0];
  for (const name of await detachedLeftOver(db)) await end(r, tableOf(name), name);
  const retiring = new Map<string, { names: string[]; default: string | undefined }>();
  for (const { table, partitions, default: defaultName } of layouts) {
    const names = partitions.filter((p) => p.to <= before).map((p) => p.name);
    if (names.length > 0) retiring.set(table, { names, default: defaultName });
  }
  if (retiring.size === 0) return { partitions: [], calls: 0, moved: 0 };
  const { rows: estimated } = await sql<{ n: string }>`
    SELECT coalesce(sum(greatest(reltuples, 0)), 0)::bigint::text AS n FROM pg_class
    WHERE relnamespace = current_schema()::regnamespace
      AND relname = ANY(${retiring.get('calls')?.names ?? []})`.execute(db);
  // A table at a time, each held only for its own detach: those with rows kept first, in their
  // owners' order (the rows kept of one may be chosen by another's: the outbox's deliveries on
  // their way, wherever these are by then).
  const order = [...new Set([...kept.map((k) => k.table), ...tables])];
  const detached: { table: string; name: string }[] = [];
  let moved = 0;
  try {
    for (const table of order) {
      const retired = retiring.get(table);
      if (!retired) continue;
      await detachWhenFree(r, table, retired.names, retired.default);
      detached.push(...retired.names.map((name) => ({ table, name })));
    }
  } finally {
    // What was detached is ended even when a later table's locks were never had.
    for (const { table, name } of detached) moved += await end(r, table, RETIRED + name);
  }
  const calls = retiring.has('calls') ? Number(estimated[0]?.n ?? 0) : 0;
  return { partitions: detached.map((d) => d.name), calls, moved };
}
