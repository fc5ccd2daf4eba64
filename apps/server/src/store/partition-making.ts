import { type Kysely, sql } from 'kysely';
import type { TimePartitioned } from './owners.js';
import {
  gaps,
  layoutOf,
  type PartitionPeriod,
  partitionName,
  periodEnd,
  periodStart,
} from './partition-layout.js';
import { setLockTimeout } from './partition-locks.js';
import type { Database } from './schema.js';

/**
 * Making PostgreSQL's time partitions ahead (partitions.ts `ensure`): each period's partition is
 * made apart, takes the rows of its period that went to the default partition meanwhile, and is
 * attached, holding the partitioned table only in a lock that lets reads and writes go on.
 */

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

/** One partition for [from, to): made apart, the default partition's rows of it moved in, attached. */
async function create(
  db: Kysely<Database>,
  { table, column }: TimePartitioned,
  defaultName: string | undefined,
  from: number,
  to: number,
): Promise<string> {
  const name = partitionName(table, from);
  const t = sql.table(name);
  const ref = sql.ref(column);
  await db.transaction().execute(async (trx) => {
    await setLockTimeout(trx);
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

/**
 * Creates what is missing of the periods from `from` to `to` (epoch ms) in each of `tables`;
 * answers the partitions made.
 */
export async function makePartitions(
  db: Kysely<Database>,
  tables: readonly TimePartitioned[],
  period: PartitionPeriod,
  from: number,
  to: number,
): Promise<string[]> {
  const made: string[] = [];
  for (const partitioned of tables) {
    const current = await layoutOf(db, partitioned.table);
    for (let start = periodStart(from, period); start < to; start = periodEnd(start, period)) {
      for (const [a, b] of gaps(start, periodEnd(start, period), current.partitions)) {
        try {
          made.push(await create(db, partitioned, current.default, a, b));
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
