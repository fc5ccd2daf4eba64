import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from './schema.js';

/**
 * PostgreSQL's time partitions (docs/deployment.md#partitions): `calls`, `deliveries` and
 * `delivery_attempts` are partitioned by range of the time each row was written (migration 0018),
 * a partition a day or a month (PARTITION_PERIOD, UTC), each with a default partition that takes
 * a row no partition covers, so a missing partition never refuses a call.
 *
 * `ensure` creates the periods ahead (the maintenance job, hourly, plugins/partitions.ts); a period
 * whose rows already went to the default partition gets them moved into it. `retire` detaches the
 * periods wholly before retention's cutoff and drops them (plugins/retention.ts): no row is deleted
 * one by one, and the deliveries still on their way, with their attempts and their calls, are
 * moved to the default partition first, never lost.
 *
 * Every change takes its locks with a short lock_timeout and is tried again rather than wait: a
 * DDL statement waiting for a lock makes every query behind it wait too. A retirement, whose
 * DETACH needs a table to itself (ACCESS EXCLUSIVE), first asks without queueing at all, and holds
 * one table at a time for one statement the server runs whole.
 */

export const PARTITION_PERIODS = ['day', 'month'] as const;
export type PartitionPeriod = (typeof PARTITION_PERIODS)[number];

/** The tables that grow with calls, each by the column of its time. */
export const PARTITIONED_TABLES = [
  { table: 'calls', column: 'at' },
  { table: 'deliveries', column: 'created_at' },
  { table: 'delivery_attempts', column: 'started_at' },
] as const;
type PartitionedTable = (typeof PARTITIONED_TABLES)[number]['table'];

/** A partition of a partitioned table; `from` null is MINVALUE (the legacy partition). */
export interface Partition {
  readonly name: string;
  readonly from: number | null;
  readonly to: number;
}

export interface PartitionLayout {
  readonly table: PartitionedTable;
  /** The ranged partitions, oldest first. */
  readonly partitions: readonly Partition[];
  /** The default partition's name. */
  readonly default: string | undefined;
}

export interface Retired {
  /** The partitions dropped (of the three tables). */
  readonly partitions: readonly string[];
  /** The calls among their rows, as PostgreSQL estimated them (a count would read every one). */
  readonly calls: number;
  /** Deliveries still on their way, moved to the default partition with their calls and attempts. */
  readonly moved: number;
}

export interface Partitions {
  readonly period: PartitionPeriod;
  /** The tables' partitions as the catalogue has them. */
  layout(): Promise<PartitionLayout[]>;
  /**
   * Creates what is missing of the periods from `from` to `to` (epoch ms), in each table; answers
   * the partitions made. A lock not had within the timeout ends the run (LockNotAvailable): the
   * job tries again at its next run, long before the period is needed.
   */
  ensure(from: number, to: number): Promise<string[]>;
  /** The periods the job keeps: from the current one's start to at least 7 days and a period ahead. */
  ensureAhead(now: number): Promise<string[]>;
  /**
   * Detaches and drops every partition wholly before `before`, a table at a time: each detach
   * holds its table for a few milliseconds of the server's, its locks asked for without queueing
   * (NOWAIT) every few milliseconds for up to NOWAIT_MS, then queued for, LOCK_TIMEOUT_MS at a
   * time, a few times; LockNotAvailable when never had (what was detached before is still ended).
   */
  retire(before: number): Promise<Retired>;
  /**
   * Below this time (epoch ms) rows are not in a period partition (the legacy and default
   * partitions): retention deletes those rows one batch at a time. Null: every time is.
   */
  batchDeletedBelow(): Promise<number | null>;
  /**
   * Where the oldest partition of calls starts (the legacy partition: where it ends), as History's
   * time windows need it (history/time-windows.ts); null while calls has no partition but the
   * default. Read from the catalogue at most once a minute: it only changes by the hour.
   */
  oldest(): Promise<number | null>;
  /** How far ahead (ms from `now`) every table has its periods; 0 when `now` is not covered. */
  coveredAhead(now: number): Promise<number>;
  /** Rows in the default partitions (counted up to `cap`): more than a few says the job is late. */
  defaultRows(cap?: number): Promise<number>;
}

const DAY = 86_400_000;
/** How long a DDL statement waits for its lock before giving up (and being tried again). */
const LOCK_TIMEOUT_MS = 250;
/**
 * How long a retirement asks for its locks without waiting (NOWAIT, every NOWAIT_EVERY_MS) before
 * it waits for them in the queue, LOCK_TIMEOUT_MS at a time.
 */
const NOWAIT_MS = 10_000;
const NOWAIT_EVERY_MS = 20;

/** The start of the period holding `t` (UTC). */
export function periodStart(t: number, period: PartitionPeriod): number {
  if (period === 'day') return Math.floor(t / DAY) * DAY;
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** The start of the period after the one holding `t`. */
export function periodEnd(t: number, period: PartitionPeriod): number {
  if (period === 'day') return periodStart(t, 'day') + DAY;
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** `calls_p20261127`: the table's name and the day its partition starts (UTC). */
export function partitionName(table: string, from: number): string {
  return `${table}_p${new Date(from).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The prefix a detached partition is renamed with until it is dropped. */
const RETIRED = 'retired_';

/** Deliveries on their way: kept through a retirement, with their attempts and calls. */
const IN_FLIGHT = "status IN ('pending', 'sending')";

/** A name quoted as an SQL identifier (for the statement `detach` has the server run whole). */
const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;

const BOUND = /^FOR VALUES FROM \((MINVALUE|'(-?\d+)')\) TO \((?:MAXVALUE|'(-?\d+)')\)$/;

/** PostgreSQL's error when a lock was not had within lock_timeout. */
export const isLockTimeout = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '55P03';

/**
 * PostgreSQL's error when a row went to a default partition while a period's partition was being
 * attached: the insert chose the default partition before the attach committed, and then found
 * that period no longer its own. Tried again, the row goes to the new partition.
 */
export const isPartitionAttachedMeanwhile = (err: unknown): boolean => {
  if (typeof err !== 'object' || err === null) return false;
  const { code, table } = err as { code?: unknown; table?: unknown };
  return code === '23514' && typeof table === 'string' && table.endsWith('_default');
};

/**
 * PostgreSQL's errors when a partition was made by someone else first: the name taken (42P07 when
 * it was there before this statement; when it was being made at the same moment, the catalogue's
 * unique index refuses the second once the first commits, 23505), or the range.
 */
const isMadeMeanwhile = (err: unknown): boolean => {
  if (typeof err !== 'object' || err === null) return false;
  const { code, constraint } = err as { code?: unknown; constraint?: unknown };
  if (code === '23505')
    return constraint === 'pg_type_typname_nsp_index' || constraint === 'pg_class_relname_nsp_index';
  return code === '42P07' || (code === '42P17' && err instanceof Error && /overlap/.test(err.message));
};

export function createPartitions(db: Kysely<Database>, period: PartitionPeriod): Partitions {
  async function layoutOf(q: Kysely<Database>, table: PartitionedTable): Promise<PartitionLayout> {
    const { rows } = await sql<{ name: string; bound: string }>`
      SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = ${table}::regclass`.execute(q);
    const partitions: Partition[] = [];
    let defaultName: string | undefined;
    for (const row of rows) {
      if (row.bound === 'DEFAULT') {
        defaultName = row.name;
        continue;
      }
      const m = BOUND.exec(row.bound);
      if (!m?.[3]) continue;
      partitions.push({ name: row.name, from: m[2] === undefined ? null : Number(m[2]), to: Number(m[3]) });
    }
    partitions.sort((a, b) => a.to - b.to);
    return { table, partitions, default: defaultName };
  }

  const layout = () => Promise.all(PARTITIONED_TABLES.map(({ table }) => layoutOf(db, table)));

  /** The parts of [from, to) that no partition of `existing` covers. */
  function gaps(from: number, to: number, existing: readonly Partition[]): [number, number][] {
    const out: [number, number][] = [];
    let at = from;
    for (const p of existing) {
      if (p.to <= at) continue;
      const start = p.from ?? Number.NEGATIVE_INFINITY;
      if (start >= to) break;
      if (start > at) out.push([at, start]);
      at = Math.max(at, p.to);
      if (at >= to) break;
    }
    if (at < to) out.push([at, to]);
    return out;
  }

  const lockTimeout = (trx: Transaction<Database>) =>
    sql.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT_MS}ms'`).execute(trx);

  /** One partition for [from, to): made apart, the default partition's rows of it moved in, attached. */
  async function create(
    table: PartitionedTable,
    column: string,
    defaultName: string | undefined,
    from: number,
    to: number,
  ): Promise<string> {
    const name = partitionName(table, from);
    const t = sql.table(name);
    const ref = sql.ref(column);
    await db.transaction().execute(async (trx) => {
      await lockTimeout(trx);
      await sql`CREATE TABLE ${t} (LIKE ${sql.table(table)} INCLUDING DEFAULTS)`.execute(trx);
      // The attach then need not read the new table to check its rows belong.
      const check = sql.ref(`${name}_bound`);
      await sql`ALTER TABLE ${t} ADD CONSTRAINT ${check}
        CHECK (${ref} >= ${sql.lit(from)} AND ${ref} < ${sql.lit(to)})`.execute(trx);
      if (defaultName) {
        await sql`WITH moved AS (
            DELETE FROM ${sql.table(defaultName)} WHERE ${ref} >= ${sql.lit(from)} AND ${ref} < ${sql.lit(to)}
            RETURNING *)
          INSERT INTO ${t} SELECT * FROM moved`.execute(trx);
      }
      // SHARE UPDATE EXCLUSIVE on the partitioned table: reads and writes go on meanwhile.
      await sql`ALTER TABLE ${sql.table(table)} ATTACH PARTITION ${t}
        FOR VALUES FROM (${sql.lit(from)}) TO (${sql.lit(to)})`.execute(trx);
      await sql`ALTER TABLE ${t} DROP CONSTRAINT ${check}`.execute(trx);
    });
    return name;
  }

  async function ensure(from: number, to: number): Promise<string[]> {
    const made: string[] = [];
    for (const { table, column } of PARTITIONED_TABLES) {
      const current = await layoutOf(db, table);
      for (let start = periodStart(from, period); start < to; start = periodEnd(start, period)) {
        for (const [a, b] of gaps(start, periodEnd(start, period), current.partitions)) {
          try {
            made.push(await create(table, column, current.default, a, b));
          } catch (err) {
            // Another instance made it first: its hourly job while this one starts (starts
            // themselves take turns, start-lock.ts).
            if (!isMadeMeanwhile(err)) throw err;
          }
        }
      }
    }
    return made;
  }

  const inFlight = sql.raw(IN_FLIGHT);

  /**
   * Detaches `table`'s partitions `names` and renames them RETIRED_… in one statement, run whole
   * by the server: the tables are held for the server's own few milliseconds, never for a round
   * trip to this process (a busy event loop, an instance starting, would stretch it). The
   * deliveries still on their way go back into `deliveries` in the same statement, so that the
   * dispatcher never finds one missing; their range has no partition now, so the default
   * partition takes them. With `queue` false its locks are asked for without queueing (NOWAIT).
   */
  async function detach(
    table: PartitionedTable,
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
      if (table === 'deliveries')
        statements.push(`INSERT INTO deliveries SELECT * FROM ${ident(RETIRED + name)} WHERE ${IN_FLIGHT};`);
    }
    await sql.raw(`DO $retire$ BEGIN ${statements.join(' ')} END $retire$`).execute(db);
  }

  /**
   * Asks for `detach`'s locks without queueing every few milliseconds for NOWAIT_MS: at an
   * instant no transaction has the tables, which under a steady load comes within a few tries. A
   * lock asked for in the queue would make every call behind it wait as long as whoever holds it.
   * The tables never free at once (a long read, a load that never pauses): queued for, waiting
   * LOCK_TIMEOUT_MS at most each time.
   */
  async function detachWhenFree(
    table: PartitionedTable,
    names: readonly string[],
    defaultName: string | undefined,
  ): Promise<void> {
    const nowaitUntil = Date.now() + NOWAIT_MS;
    while (Date.now() < nowaitUntil) {
      try {
        return await detach(table, names, defaultName, false);
      } catch (err) {
        if (!isLockTimeout(err)) throw err;
        await new Promise((resolve) => setTimeout(resolve, NOWAIT_EVERY_MS));
      }
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return await detach(table, names, defaultName, true);
      } catch (err) {
        if (!isLockTimeout(err) || attempt >= 20) throw err;
        // Whoever held the lock (a long read) may be done in a moment; the calls behind the
        // DETACH waited at most LOCK_TIMEOUT_MS.
        await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
      }
    }
  }

  /**
   * Ends a detached partition: the rows still needed go back into their table (the default
   * partition takes them), then the partition is dropped, in one transaction that holds only the
   * detached table; answers the deliveries on their way it held. The attempts of the deliveries on
   * their way go back, and the calls of every delivery on its way (one queued just after its
   * call's period ended has its call in a retired period and is not in it). A partition detached
   * and not ended (the process ended between) is ended by the next retirement.
   */
  async function end(retired: string): Promise<number> {
    const t = sql.table(retired);
    return db.transaction().execute(async (trx) => {
      let onTheirWay = 0;
      if (retired.startsWith(`${RETIRED}deliveries_`)) {
        // Already back in `deliveries` with the detach (no INSERT here: the dispatcher may have
        // moved them on since); counted for the log.
        const { rows } = await sql<{ n: string }>`
          SELECT count(*)::text AS n FROM ${t} WHERE ${inFlight}`.execute(trx);
        onTheirWay = Number(rows[0]?.n ?? 0);
      } else if (retired.startsWith(`${RETIRED}delivery_attempts_`)) {
        await sql`INSERT INTO delivery_attempts SELECT * FROM ${t}
          WHERE delivery_id IN (SELECT id FROM deliveries WHERE ${inFlight})`.execute(trx);
      } else if (retired.startsWith(`${RETIRED}calls_`)) {
        await sql`INSERT INTO calls SELECT * FROM ${t}
          WHERE id IN (SELECT call_id FROM deliveries WHERE ${inFlight})`.execute(trx);
      }
      await sql`DROP TABLE ${t}`.execute(trx);
      return onTheirWay;
    });
  }

  /** The tables a retirement detached and did not end. */
  async function detachedLeftOver(): Promise<string[]> {
    const { rows } = await sql<{ name: string }>`
      SELECT relname AS name FROM pg_class
      WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'
        AND starts_with(relname, ${RETIRED})`.execute(db);
    return rows.map((r) => r.name);
  }

  async function retire(before: number): Promise<Retired> {
    for (const name of await detachedLeftOver()) await end(name);
    const retiring = new Map<PartitionedTable, { names: string[]; default: string | undefined }>();
    for (const { table, partitions, default: defaultName } of await layout()) {
      const names = partitions.filter((p) => p.to <= before).map((p) => p.name);
      if (names.length > 0) retiring.set(table, { names, default: defaultName });
    }
    if (retiring.size === 0) return { partitions: [], calls: 0, moved: 0 };
    const { rows: estimated } = await sql<{ n: string }>`
      SELECT coalesce(sum(greatest(reltuples, 0)), 0)::bigint::text AS n FROM pg_class
      WHERE relnamespace = current_schema()::regnamespace
        AND relname = ANY(${retiring.get('calls')?.names ?? []})`.execute(db);
    // A table at a time, each held only for its own detach. The deliveries first: the others'
    // rows kept are those of the deliveries on their way, wherever these are by then.
    const detached: string[] = [];
    let moved = 0;
    try {
      for (const table of ['deliveries', 'delivery_attempts', 'calls'] as const) {
        const retired = retiring.get(table);
        if (!retired) continue;
        await detachWhenFree(table, retired.names, retired.default);
        detached.push(...retired.names);
      }
    } finally {
      // What was detached is ended even when a later table's locks were never had.
      for (const name of detached) moved += await end(RETIRED + name);
    }
    const calls = retiring.has('calls') ? Number(estimated[0]?.n ?? 0) : 0;
    return { partitions: detached, calls, moved };
  }

  let oldest: { value: number | null; read: number } | undefined;

  return {
    period,
    layout,
    async ensure(from, to) {
      oldest = undefined;
      return ensure(from, to);
    },
    async oldest() {
      if (oldest && performance.now() - oldest.read < 60_000) return oldest.value;
      const { partitions } = await layoutOf(db, 'calls');
      const value = partitions.length === 0 ? null : Math.min(...partitions.map((p) => p.from ?? p.to));
      oldest = { value, read: performance.now() };
      return value;
    },
    ensureAhead(now) {
      oldest = undefined;
      return ensure(
        periodStart(now, period),
        Math.max(now + 7 * DAY, periodEnd(periodEnd(now, period), period)),
      );
    },
    async retire(before) {
      oldest = undefined;
      return retire(before);
    },
    async batchDeletedBelow() {
      let below: number | null = null;
      for (const { partitions } of await layout()) {
        const first = partitions.find((p) => p.from !== null);
        const start = first?.from ?? null;
        // No period partition yet: every row is in the legacy or default partition.
        if (start === null) return null;
        below = below === null ? start : Math.min(below, start);
      }
      return below;
    },
    async coveredAhead(now) {
      let ahead = Number.POSITIVE_INFINITY;
      for (const { partitions } of await layout()) {
        let end = now;
        for (const p of partitions) {
          if ((p.from ?? Number.NEGATIVE_INFINITY) <= end && p.to > end) end = p.to;
        }
        ahead = Math.min(ahead, end - now);
      }
      return Number.isFinite(ahead) ? ahead : 0;
    },
    async defaultRows(cap = 10_000) {
      let total = 0;
      for (const { default: name } of await layout()) {
        if (!name) continue;
        const { rows } = await sql<{ n: string }>`
          SELECT count(*)::text AS n FROM (SELECT 1 FROM ${sql.table(name)} LIMIT ${cap}) AS found`.execute(
          db,
        );
        total += Number(rows[0]?.n ?? 0);
      }
      return total;
    },
  };
}
