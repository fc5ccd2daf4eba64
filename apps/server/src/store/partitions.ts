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
 * DETACH needs the tables to itself (ACCESS EXCLUSIVE), first asks without queueing at all.
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
   * Detaches and drops every partition wholly before `before`, in one transaction for the three
   * tables. Its locks are asked for without queueing (NOWAIT) every few milliseconds for up to
   * NOWAIT_MS, then queued for, LOCK_TIMEOUT_MS at a time, a few times.
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

/** PostgreSQL's errors when a partition was made by someone else first: the name taken, or the range. */
const isMadeMeanwhile = (err: unknown): boolean => {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
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
            // Another instance starting at the same time made it first.
            if (!isMadeMeanwhile(err)) throw err;
          }
        }
      }
    }
    return made;
  }

  /** Drops what a retirement detached but did not get to drop (the process ended between). */
  async function dropLeftovers(): Promise<void> {
    const { rows } = await sql<{ name: string }>`
      SELECT relname AS name FROM pg_class
      WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'
        AND starts_with(relname, ${RETIRED})`.execute(db);
    for (const { name } of rows) await sql`DROP TABLE IF EXISTS ${sql.table(name)}`.execute(db);
  }

  async function retireOnce(before: number, queue: boolean): Promise<Retired> {
    const detached: string[] = [];
    let calls = 0;
    let moved = 0;
    await db.transaction().execute(async (trx) => {
      await lockTimeout(trx);
      const retiring: { table: PartitionedTable; name: string }[] = [];
      for (const { table } of PARTITIONED_TABLES) {
        for (const p of (await layoutOf(trx, table)).partitions) {
          if (p.to <= before) retiring.push({ table, name: p.name });
        }
      }
      if (retiring.length === 0) return;
      if (!queue) {
        // Refused at once (LockNotAvailable) while any transaction has the tables: a lock asked
        // for in the queue would make every call behind it wait as long as that transaction,
        // only to give up after lock_timeout when it is a slow one (a slow commit, a long read).
        const parents = [...new Set(retiring.map((r) => r.table))];
        await sql`LOCK TABLE ${sql.join(parents.map((t) => sql`ONLY ${sql.table(t)}`))}
          IN ACCESS EXCLUSIVE MODE NOWAIT`.execute(trx);
      }
      // ACCESS EXCLUSIVE on each partitioned table until the commit: a few milliseconds, the
      // moves below reading only the detached tables' few in-flight rows through their indexes.
      for (const { table, name } of retiring) {
        await sql`ALTER TABLE ${sql.table(table)} DETACH PARTITION ${sql.table(name)}`.execute(trx);
        await sql`ALTER TABLE ${sql.table(name)} RENAME TO ${sql.table(RETIRED + name)}`.execute(trx);
        detached.push(RETIRED + name);
      }
      const { rows: estimated } = await sql<{ n: string }>`
        SELECT coalesce(sum(greatest(reltuples, 0)), 0)::bigint::text AS n FROM pg_class
        WHERE relnamespace = current_schema()::regnamespace
          AND relname = ANY(${retiring.filter((r) => r.table === 'calls').map((r) => RETIRED + r.name)})`.execute(
        trx,
      );
      calls = Number(estimated[0]?.n ?? 0);
      // Deliveries still on their way go back in: their range has no partition now, so the
      // default partition takes them. Then their attempts, and the calls of every delivery on
      // its way (one queued just after its call's period ended has its call in the retired one).
      const inFlight = sql`status IN ('pending', 'sending')`;
      for (const { table, name } of retiring) {
        if (table !== 'deliveries') continue;
        const result = await sql`INSERT INTO deliveries
          SELECT * FROM ${sql.table(RETIRED + name)} WHERE ${inFlight}`.execute(trx);
        moved += Number(result.numAffectedRows ?? 0);
      }
      for (const { table, name } of retiring) {
        if (table === 'delivery_attempts') {
          await sql`INSERT INTO delivery_attempts SELECT * FROM ${sql.table(RETIRED + name)}
            WHERE delivery_id IN (SELECT id FROM deliveries WHERE ${inFlight})`.execute(trx);
        } else if (table === 'calls') {
          await sql`INSERT INTO calls SELECT * FROM ${sql.table(RETIRED + name)}
            WHERE id IN (SELECT call_id FROM deliveries WHERE ${inFlight})`.execute(trx);
        }
      }
    });
    // Outside the transaction: a drop locks only the table it drops.
    for (const name of detached) await sql`DROP TABLE IF EXISTS ${sql.table(name)}`.execute(db);
    return { partitions: detached.map((n) => n.slice(RETIRED.length)), calls, moved };
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
      await dropLeftovers();
      // First without queueing for the locks, tried again every few milliseconds: at an instant
      // no transaction has the tables, which under a steady load comes within a few tries.
      const nowaitUntil = Date.now() + NOWAIT_MS;
      while (Date.now() < nowaitUntil) {
        try {
          return await retireOnce(before, false);
        } catch (err) {
          if (!isLockTimeout(err)) throw err;
          await new Promise((resolve) => setTimeout(resolve, NOWAIT_EVERY_MS));
        }
      }
      // The tables never free at once (a long read, a load that never pauses): queued for them.
      for (let attempt = 1; ; attempt++) {
        try {
          return await retireOnce(before, true);
        } catch (err) {
          if (!isLockTimeout(err) || attempt >= 20) throw err;
          // Whoever held the lock (a long read) may be done in a moment; the calls behind the
          // DETACH waited at most LOCK_TIMEOUT_MS.
          await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
        }
      }
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
