import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';

/**
 * Where PostgreSQL's time partitions are (partitions.ts): the periods, their partitions' names,
 * and the partitions a table has, as the catalogue tells them.
 */

export const PARTITION_PERIODS = ['day', 'month'] as const;
export type PartitionPeriod = (typeof PARTITION_PERIODS)[number];

/** A partition of a partitioned table; `from` null is MINVALUE (the legacy partition). */
export interface Partition {
  readonly name: string;
  readonly from: number | null;
  readonly to: number;
}

export interface PartitionLayout {
  readonly table: string;
  /** The ranged partitions, oldest first. */
  readonly partitions: readonly Partition[];
  /** The default partition's name. */
  readonly default: string | undefined;
}

export const DAY = 86_400_000;

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

const BOUND = /^FOR VALUES FROM \((MINVALUE|'(-?\d+)')\) TO \((?:MAXVALUE|'(-?\d+)')\)$/;

/** `table`'s partitions as the catalogue has them. */
export async function layoutOf(q: Kysely<Database>, table: string): Promise<PartitionLayout> {
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

/** The parts of [from, to) that no partition of `existing` covers. */
export function gaps(from: number, to: number, existing: readonly Partition[]): [number, number][] {
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
