import { type Kysely, type QueryCreator, sql } from 'kysely';
import { type Database, type DialectName, type SchoolScope, schoolCondition } from '../store/index.js';

/**
 * Hourly roll-ups of the calls, for the Dashboard (docs/performance.md#the-dashboard): per hour,
 * the calls by operation, outcome and latency bin (`call_hours`), and the errors by operation,
 * status, outcome and text (`call_error_hours`). A month of statistics then reads a few thousand
 * rows, not a million calls.
 *
 * They are made from the calls, not in each call's commit: an hour is rolled up once it ended
 * ROLLUP_GRACE_MS ago (every call of it is committed by then: a call is recorded before it is
 * answered), a step of hours per transaction, the watermark `call_rollup_state.rolled_until`
 * moving with the rows in the same commit. The hot path is untouched, and several instances
 * never count an hour twice (one rolls at a time, and a step only moves the watermark from where
 * it found it). Statistics read the roll-ups up to the watermark and the calls after it.
 *
 * The same per school (`school_call_hours`, `school_call_error_hours`, migration 0025), of the
 * calls that belong to one, in the same steps: a member of staff limited to schools reads their
 * schools' rows; the organisation's tables keep their size, and the Dashboard of organisation-wide
 * staff its speed (docs/performance.md#staff-scoped-to-schools).
 */

export const HOUR_MS = 3_600_000;
/** An hour is rolled up this long after it ended. */
export const ROLLUP_GRACE_MS = 5 * 60_000;
/** A step rolls at most this many hours (a day), fewer when its hours are busy. */
const MAX_STEP_HOURS = 24;
/** A step should take about this long on SQLite (its one connection also answers requests). */
const STEP_TARGET_MS = 20;

export const floorHour = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** A step's hours after one of `hours` took `tookMs`: sized so that a step of busy hours stays short. */
export const nextStepHours = (hours: number, tookMs: number): number =>
  Math.max(
    1,
    Math.min(MAX_STEP_HOURS, hours * 4, Math.floor((hours * STEP_TARGET_MS) / Math.max(tookMs, 0.5))),
  );
export const ceilHour = (ms: number): number => Math.ceil(ms / HOUR_MS) * HOUR_MS;

/** Durations in logarithmic bins, 8 per factor e: the same as call-stats.ts reads from calls. */
export const LATENCY_BINS_PER_E = 8;
export const latencyBinSql = sql<number>`CAST(floor(ln(${sql.ref('duration_ms')} + 1) * ${sql.lit(LATENCY_BINS_PER_E)}) AS INTEGER)`;
/** Error texts are grouped by their beginning: what a caller sent, quoted at the end, may vary. */
export const ERROR_TEXT_MAX = 200;
export const errorTextSql = sql<string | null>`substr(${sql.ref('error')}, 1, ${sql.lit(ERROR_TEXT_MAX)})`;

/**
 * The start of the bucket of `bucketMs` a time column falls in, in SQL (the statistics' buckets
 * and the roll-ups' hours alike). Integer literals: a bound JS number is a REAL to SQLite, which
 * would not truncate.
 */
export const bucketOf = (column: string, bucketMs: number) =>
  sql<number>`(${sql.ref(column)} / ${sql.lit(Math.trunc(bucketMs))}) * ${sql.lit(Math.trunc(bucketMs))}`;

/**
 * The calls of [from, to), times in epoch ms: what every statistic and roll-up counts; those of
 * `scope`'s schools only when it is given (through calls_school_at for one school).
 */
export const callsBetween = (db: QueryCreator<Database>, from: number, to: number, scope?: SchoolScope) => {
  const calls = db.selectFrom('calls').where('at', '>=', from).where('at', '<', to);
  const schools = schoolCondition(scope);
  return schools ? calls.where(schools) : calls;
};

export interface CallRollups {
  /** Hours before this (epoch ms) are rolled up; null while none is. */
  rolledUntil(): Promise<number | null>;
  /**
   * Rolls up the hours that ended ROLLUP_GRACE_MS before `now`, one step per transaction, until
   * none is left or `budgetMs` has passed (the event loop turns between steps). Returns the hours
   * rolled; 0 when another instance is rolling or nothing is due.
   */
  rollUp(now: number, options?: { readonly budgetMs?: number }): Promise<number>;
  /** Retention: the roll-ups of hours that ended before `before`. */
  deleteOlderThan(before: number): Promise<void>;
}

/**
 * The roll-ups' watermark as `db` has it: the calls' (`call_rollup_state`), or the deliveries'
 * (`delivery_rollup_state`, delivery-rollups.ts). The Dashboard reads it where it reads the
 * roll-ups and the calls (`store.reads`: a replica's watermark goes with the roll-ups it has).
 */
export async function readRolledUntil(
  db: Kysely<Database>,
  state: 'call_rollup_state' | 'delivery_rollup_state' = 'call_rollup_state',
): Promise<number | null> {
  const row = await db.selectFrom(state).select('rolled_until').where('id', '=', 1).executeTakeFirst();
  return row?.rolled_until === null || row?.rolled_until === undefined ? null : Number(row.rolled_until);
}

export function createCallRollups(db: Kysely<Database>, dialect: DialectName): CallRollups {
  let stepHours = 1;

  const rolledUntil = () => readRolledUntil(db);

  /** One step: [from, to) rolled, the watermark moved from `from` (or null) to `to`; false if it had moved. */
  const step = (from: number, to: number, wasNull: boolean): Promise<boolean> =>
    db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable('call_rollup_state')
        .set({ rolled_until: to })
        .where('id', '=', 1)
        .where((eb) => (wasNull ? eb('rolled_until', 'is', null) : eb('rolled_until', '=', from)))
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) !== 1) return false;
      await trx
        .insertInto('call_hours')
        .columns(['hour', 'operation', 'outcome', 'bin', 'count'])
        .expression(
          callsBetween(trx, from, to)
            .select((eb) => [
              bucketOf('at', HOUR_MS).as('hour'),
              'operation',
              'outcome',
              latencyBinSql.as('bin'),
              eb.fn.countAll<number>().as('count'),
            ])
            .groupBy([sql`1`, 'operation', 'outcome', sql`4`]),
        )
        .execute();
      await trx
        .insertInto('call_error_hours')
        .columns(['hour', 'operation', 'status', 'outcome', 'error', 'count'])
        .expression(
          callsBetween(trx, from, to)
            .select((eb) => [
              bucketOf('at', HOUR_MS).as('hour'),
              'operation',
              'status',
              'outcome',
              errorTextSql.as('error'),
              eb.fn.countAll<number>().as('count'),
            ])
            .where('outcome', 'in', ['client-error', 'server-error'])
            .groupBy([sql`1`, 'operation', 'status', 'outcome', sql`5`]),
        )
        .execute();
      // Per school, of the calls that belong to one.
      await trx
        .insertInto('school_call_hours')
        .columns(['hour', 'school_id', 'operation', 'outcome', 'bin', 'count'])
        .expression(
          callsBetween(trx, from, to)
            .select((eb) => [
              bucketOf('at', HOUR_MS).as('hour'),
              sql<number>`school_id`.as('school_id'),
              'operation',
              'outcome',
              latencyBinSql.as('bin'),
              eb.fn.countAll<number>().as('count'),
            ])
            .where('school_id', 'is not', null)
            .groupBy([sql`1`, 'school_id', 'operation', 'outcome', sql`5`]),
        )
        .execute();
      await trx
        .insertInto('school_call_error_hours')
        .columns(['hour', 'school_id', 'operation', 'status', 'outcome', 'error', 'count'])
        .expression(
          callsBetween(trx, from, to)
            .select((eb) => [
              bucketOf('at', HOUR_MS).as('hour'),
              sql<number>`school_id`.as('school_id'),
              'operation',
              'status',
              'outcome',
              errorTextSql.as('error'),
              eb.fn.countAll<number>().as('count'),
            ])
            .where('school_id', 'is not', null)
            .where('outcome', 'in', ['client-error', 'server-error'])
            .groupBy([sql`1`, 'school_id', 'operation', 'status', 'outcome', sql`6`]),
        )
        .execute();
      return true;
    });

  return {
    rolledUntil,
    async rollUp(now, options = {}) {
      const began = performance.now();
      const budget = options.budgetMs ?? Number.POSITIVE_INFINITY;
      const end = floorHour(now - ROLLUP_GRACE_MS);
      let rolled = 0;
      for (;;) {
        const watermark = await rolledUntil();
        let from = watermark;
        if (from === null) {
          // Nothing rolled yet: from the oldest call's hour (none: nothing to do).
          const oldest = await db.selectFrom('calls').select('at').orderBy('at').limit(1).executeTakeFirst();
          if (!oldest) return rolled;
          from = floorHour(Number(oldest.at));
        }
        if (from >= end) return rolled;
        const to = Math.min(end, from + stepHours * HOUR_MS);
        const t = performance.now();
        if (!(await step(from, to, watermark === null))) return rolled;
        rolled += (to - from) / HOUR_MS;
        stepHours = nextStepHours(stepHours, performance.now() - t);
        if (performance.now() - began >= budget) return rolled;
        if (dialect === 'sqlite') await new Promise((resolve) => setImmediate(resolve));
      }
    },
    async deleteOlderThan(before) {
      const hour = floorHour(before);
      for (const table of [
        'call_hours',
        'call_error_hours',
        'school_call_hours',
        'school_call_error_hours',
      ] as const)
        await db.deleteFrom(table).where('hour', '<', hour).execute();
    },
  };
}
