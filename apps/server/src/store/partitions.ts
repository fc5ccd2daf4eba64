import { type Kysely, sql } from 'kysely';
import { partitionedTables } from './migrations.js';
import type { TableOwner, TimePartitioned } from './owners.js';
import {
  DAY,
  layoutOf,
  type PartitionLayout,
  type PartitionPeriod,
  periodEnd,
  periodStart,
} from './partition-layout.js';
import { makePartitions } from './partition-making.js';
import { type Retired, retirePartitions } from './partition-retirement.js';
import type { Database } from './schema.js';

/**
 * PostgreSQL's time partitions (docs/deployment.md#partitions): `calls` and the tables its owners
 * partition by time (the outbox's `deliveries` and `delivery_attempts`: owners.ts) are partitioned
 * by range of the time each row was written (migration 0018), a partition a day or a month
 * (PARTITION_PERIOD, UTC), each with a default partition that takes a row no partition covers, so
 * a missing partition never refuses a call.
 *
 * `ensure` creates the periods ahead (the maintenance job, hourly, plugins/partitions.ts;
 * partition-making.ts); a period whose rows already went to the default partition gets them moved
 * into it. `retire` detaches the periods wholly before retention's cutoff and drops them
 * (plugins/retention.ts; partition-retirement.ts): no row is deleted one by one, and the rows the
 * owners keep (the deliveries still on their way, with their attempts and their calls) are moved
 * to the default partition first, never lost.
 *
 * Every change takes its locks with a short lock_timeout and is tried again rather than wait: a
 * DDL statement waiting for a lock makes every query behind it wait too (partition-locks.ts).
 */

export {
  PARTITION_PERIODS,
  type Partition,
  type PartitionLayout,
  type PartitionPeriod,
  partitionName,
  periodEnd,
  periodStart,
} from './partition-layout.js';
export { isLockTimeout } from './partition-locks.js';
export { isPartitionAttachedMeanwhile } from './partition-making.js';
export type { Retired } from './partition-retirement.js';

export interface Partitions {
  readonly period: PartitionPeriod;
  /** The tables partitioned by time, each by the column of its time: the store's, then its owners'. */
  readonly tables: readonly TimePartitioned[];
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
   * The rows the owners keep (`TableOwner.kept`) go back into their tables first.
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

export function createPartitions(
  db: Kysely<Database>,
  period: PartitionPeriod,
  owners: readonly TableOwner[],
): Partitions {
  const tables = partitionedTables(owners);
  const kept = owners.flatMap((o) => o.kept);
  const layout = () => Promise.all(tables.map(({ table }) => layoutOf(db, table)));
  let oldest: { value: number | null; read: number } | undefined;

  return {
    period,
    tables,
    layout,
    async ensure(from, to) {
      oldest = undefined;
      return makePartitions(db, tables, period, from, to);
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
      return makePartitions(
        db,
        tables,
        period,
        periodStart(now, period),
        Math.max(now + 7 * DAY, periodEnd(periodEnd(now, period), period)),
      );
    },
    async retire(before) {
      oldest = undefined;
      return retirePartitions(db, kept, await layout(), before);
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
