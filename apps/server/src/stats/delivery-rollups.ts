import { DELIVERY_STATES, type DeliveryState } from '@school/contract';
import type { Kysely, QueryCreator, SelectQueryBuilder, Transaction } from 'kysely';
import {
  countsQueuedSince,
  deliveryGroupsQueued,
  hourlyDeliveryGroups,
  hourlySchoolDeliveryGroups,
  oldestOnTheirWayAt,
  oldestQueuedAt,
  onTheirWayQueuedBefore,
  onTheirWaySince,
} from '../outbox/index.js';
import {
  type Database,
  type DeliveryStatus,
  type DialectName,
  type SchoolScope,
  schoolCondition,
} from '../store/index.js';
import {
  bucketOf,
  floorHour,
  HOUR_MS,
  nextStepHours,
  ROLLUP_GRACE_MS,
  readRolledUntil,
} from './call-rollups.js';

/**
 * Hourly roll-ups of the deliveries, for the Dashboard (docs/performance.md#the-dashboard): per
 * hour queued, the deliveries by status and by whether the `log` provider took them, with their
 * attempts (`delivery_hours`). A month of them then reads a few thousand rows, not every delivery.
 * The deliveries themselves are read through the outbox's functions (outbox/delivery-counts.ts).
 *
 * A delivery changes after it is queued, so an hour is rolled up only once none of its deliveries
 * is on its way (the outbox's ON_THEIR_WAY): the watermark `delivery_rollup_state.rolled_until`
 * never passes the hour of the oldest one that is. Every status is then final but `dead`, which
 * staff may resend: a resend (outbox/sql.ts, given `lockDeliveryRollupsForResend` by
 * plugins/outbox.ts) moves the watermark back to the resent delivery's hour and drops the roll-ups
 * from there in its own transaction, and the hours are rolled up again once what was resent has
 * settled. Both take the watermark's row first, so a step and a resend never interleave. Steps are
 * made as the calls' are (call-rollups.ts), by the same job.
 *
 * The same per school (`school_delivery_hours`, migration 0025), of the deliveries that belong to
 * one, made, dropped and read back alike in the same steps and under the same watermark: a member
 * of staff limited to schools reads their schools' rows (a `scope`), organisation-wide staff and
 * /metrics the organisation's.
 */

/** One group of deliveries of a bucket, as the Dashboard counts them (raw or rolled up alike). */
export interface DeliveryGroup {
  readonly bucket: number;
  readonly status: DeliveryStatus;
  /** 1: taken by the `log` provider (written to the log, nothing sent). */
  readonly logged: number;
  readonly count: number;
  readonly attempts: number;
}

const toGroups = (
  rows: { bucket: number; status: DeliveryStatus; logged: number; count: number; attempts: number | null }[],
): DeliveryGroup[] =>
  rows.map((r) => ({
    bucket: Number(r.bucket),
    status: r.status,
    logged: Number(r.logged),
    count: Number(r.count),
    attempts: Number(r.attempts ?? 0),
  }));

/**
 * The deliveries queued in [from, to), grouped by bucket, status and `logged`, from their table;
 * those of `scope`'s schools only when it is given.
 */
export async function deliveryGroups(
  db: Kysely<Database>,
  bucketMs: number,
  from: number,
  to: number,
  scope?: SchoolScope,
): Promise<DeliveryGroup[]> {
  const rows = await deliveryGroupsQueued(
    db,
    (column) => bucketOf(column, bucketMs),
    from,
    to,
    scope,
  ).execute();
  return toGroups(rows);
}

/**
 * The same, for whole hours [from, to) before the watermark, from the roll-ups: the
 * organisation's, or with a limited `scope` its schools' (`school_delivery_hours`).
 */
export async function rolledDeliveryGroups(
  db: Kysely<Database>,
  bucketMs: number,
  from: number,
  to: number,
  scope?: SchoolScope,
): Promise<DeliveryGroup[]> {
  const rows = await rolledHours(db, scope)
    .select((eb) => [
      bucketOf('hour', bucketMs).as('bucket'),
      'status',
      'logged',
      eb.fn.sum<number>('count').as('count'),
      eb.fn.sum<number>('attempts').as('attempts'),
    ])
    .where('hour', '>=', from)
    .where('hour', '<', to)
    .groupBy(['bucket', 'status', 'logged'])
    .execute();
  return toGroups(rows);
}

/**
 * The roll-ups `scope` reads: the organisation's (`delivery_hours`), or with a limited scope its
 * schools' rows of `school_delivery_hours`, which has the same columns and `school_id`: read as
 * the organisation's are, its columns named alike.
 */
function rolledHours(
  db: QueryCreator<Database>,
  scope: SchoolScope | undefined,
): SelectQueryBuilder<Database, 'delivery_hours', object> {
  const schools = schoolCondition(scope);
  if (!schools) return db.selectFrom('delivery_hours');
  return db.selectFrom('school_delivery_hours').where(schools) as unknown as SelectQueryBuilder<
    Database,
    'delivery_hours',
    object
  >;
}

/** Drops the roll-ups (the organisation's and the schools') of the hours from `hour` on. */
async function dropHoursFrom(trx: Transaction<Database>, hour: number): Promise<void> {
  await trx.deleteFrom('delivery_hours').where('hour', '>=', hour).execute();
  await trx.deleteFrom('school_delivery_hours').where('hour', '>=', hour).execute();
}

/** The watermark as `db` has it (a replica's goes with the roll-ups it has). */
export const readDeliveriesRolledUntil = (db: Kysely<Database>): Promise<number | null> =>
  readRolledUntil(db, 'delivery_rollup_state');

/**
 * Takes the watermark's row until `trx` ends (PostgreSQL; SQLite's one writer serialises anyway)
 * and answers it. A step and a resend each take it first.
 */
async function holdWatermark(trx: Transaction<Database>, dialect: DialectName): Promise<number | null> {
  let q = trx.selectFrom('delivery_rollup_state').select('rolled_until').where('id', '=', 1);
  if (dialect === 'postgres') q = q.forUpdate();
  const row = await q.executeTakeFirst();
  return row?.rolled_until === null || row?.rolled_until === undefined ? null : Number(row.rolled_until);
}

/**
 * In a resend's transaction, before its deliveries change: the watermark's row held. Then
 * `reopenHoursFrom` with the oldest resent delivery's `created_at` (null: none was resent) makes
 * its hour and those after it not rolled up any more, when they were: the watermark goes back to
 * it and their roll-ups are dropped (the next steps roll them up again once the resent ones settle).
 */
export async function lockDeliveryRollupsForResend(
  trx: Transaction<Database>,
  dialect: DialectName,
): Promise<{ reopenHoursFrom(createdAt: number | null): Promise<void> }> {
  const rolledUntil = await holdWatermark(trx, dialect);
  return {
    async reopenHoursFrom(createdAt) {
      if (createdAt === null || rolledUntil === null || createdAt >= rolledUntil) return;
      const hour = floorHour(createdAt);
      await trx
        .updateTable('delivery_rollup_state')
        .set({ rolled_until: hour })
        .where('id', '=', 1)
        .execute();
      await dropHoursFrom(trx, hour);
    },
  };
}

export interface DeliveryRollups {
  /** Hours before this (epoch ms) are rolled up; null while none is. */
  rolledUntil(): Promise<number | null>;
  /**
   * Rolls up the hours that ended ROLLUP_GRACE_MS before `now` and have no delivery on its way,
   * one step per transaction, until none is left or `budgetMs` has passed. Returns the hours
   * rolled.
   */
  rollUp(now: number, options?: { readonly budgetMs?: number }): Promise<number>;
  /**
   * Retention: the roll-ups of hours that ended before `before` and of which no delivery is kept
   * (retention cuts at a whole hour: plugins/retention.ts).
   */
  deleteOlderThan(before: number): Promise<void>;
  /**
   * Every delivery kept, by state as the API names them (`sent` without the `log` provider's,
   * which are `logged`), read in one snapshot: the rolled-up hours' counts, and the deliveries
   * queued since the watermark counted one by one. So the cost is the deliveries of the last hour
   * or so (longer while some wait out an outage: the watermark waits for them), not every
   * delivery kept (docs/performance.md#the-outbox-on-partitions). With a limited `scope`, the
   * deliveries of its schools only (their roll-ups, and theirs since the watermark).
   */
  stateCounts(scope?: SchoolScope): Promise<Record<DeliveryState, number>>;
}

/** Before every delivery's `created_at`: the watermark when none is rolled up yet. */
const BEFORE_ALL = Number.MIN_SAFE_INTEGER;

export function createDeliveryRollups(db: Kysely<Database>, dialect: DialectName): DeliveryRollups {
  let stepHours = 1;

  /**
   * One step from the watermark (or the oldest delivery's hour) to at most `to`, stopped short at
   * the hour of a delivery on its way. Answers the hours rolled, or null when nothing is left.
   */
  const step = (end: number): Promise<number | null> =>
    db.transaction().execute(async (trx) => {
      let from = await holdWatermark(trx, dialect);
      if (from === null) {
        const oldest = await oldestQueuedAt(trx);
        if (oldest === null) return null;
        from = floorHour(oldest);
      }
      let to = Math.min(end, from + stepHours * HOUR_MS);
      // Read with the watermark held: a resend waits for this step, and one before it is seen.
      const onTheirWay = await oldestOnTheirWayAt(trx);
      const held = onTheirWay === null ? null : floorHour(onTheirWay);
      if (held !== null && held < from) {
        // On its way in an hour rolled up: not by a resend, which moves the watermark back itself
        // (data copied in, say); the hours from its own are rolled up again once it has settled.
        await trx
          .updateTable('delivery_rollup_state')
          .set({ rolled_until: held })
          .where('id', '=', 1)
          .execute();
        await dropHoursFrom(trx, held);
        return null;
      }
      if (held !== null) to = Math.min(to, held);
      if (to <= from) return null;
      const hour = (column: 'created_at') => bucketOf(column, HOUR_MS);
      await trx
        .insertInto('delivery_hours')
        .columns(['hour', 'status', 'logged', 'count', 'attempts'])
        .expression(hourlyDeliveryGroups(trx, hour, from, to))
        .execute();
      await trx
        .insertInto('school_delivery_hours')
        .columns(['hour', 'school_id', 'status', 'logged', 'count', 'attempts'])
        .expression(hourlySchoolDeliveryGroups(trx, hour, from, to))
        .execute();
      await trx.updateTable('delivery_rollup_state').set({ rolled_until: to }).where('id', '=', 1).execute();
      return (to - from) / HOUR_MS;
    });

  return {
    rolledUntil: () => readDeliveriesRolledUntil(db),
    async rollUp(now, options = {}) {
      const began = performance.now();
      const budget = options.budgetMs ?? Number.POSITIVE_INFINITY;
      const end = floorHour(now - ROLLUP_GRACE_MS);
      let rolled = 0;
      for (;;) {
        const t = performance.now();
        const hours = await step(end);
        if (hours === null) return rolled;
        rolled += hours;
        stepHours = nextStepHours(stepHours, performance.now() - t);
        if (performance.now() - began >= budget) return rolled;
        if (dialect === 'sqlite') await new Promise((resolve) => setImmediate(resolve));
      }
    },
    async deleteOlderThan(before) {
      // Only hours none of whose deliveries is kept, so that the roll-ups and the table still add
      // up (`stateCounts`): on PostgreSQL retention drops deliveries a whole partition at a time,
      // up to a PARTITION_PERIOD after `before`.
      const oldest = await oldestQueuedAt(db);
      const kept = oldest !== null ? floorHour(oldest) : Number.POSITIVE_INFINITY;
      const end = Math.min(floorHour(before), kept);
      await db.deleteFrom('delivery_hours').where('hour', '<', end).execute();
      await db.deleteFrom('school_delivery_hours').where('hour', '<', end).execute();
    },
    stateCounts(scope) {
      // The watermark, then the counts it splits, in one snapshot (a resend in between moves it
      // back); as a value, not a subquery, so that the planner leaves out the partitions before
      // it (a subquery's value prunes only as the query runs, and is planned over every one).
      return db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute(async (trx) => {
          const watermark = (await readDeliveriesRolledUntil(trx)) ?? BEFORE_ALL;
          // PostgreSQL: when the oldest delivery on its way was queued (a statement planned once
          // per connection); SQLite: undefined.
          const since = await onTheirWaySince(trx, dialect);
          let counts = rolledHours(trx, scope)
            // The hours rolled up: none of their deliveries is on its way (the watermark waits).
            .select((eb) => ['status', 'logged', eb.fn.sum<number>('count').as('n')])
            .where('hour', '<', watermark)
            .groupBy(['status', 'logged'])
            // The deliveries queued since, one by one (on PostgreSQL, their partitions alone).
            .unionAll(countsQueuedSince(trx, watermark, scope));
          // Deliveries on their way in hours rolled up: none but those copied in since (the next
          // step moves the watermark back to them). On PostgreSQL read only when there are, from
          // the oldest: planned over every partition before the watermark, that part took longer
          // to plan than the rest of the page to read (docs/performance.md#the-outbox-on-partitions).
          if (since === undefined || (since !== null && since < watermark))
            counts = counts.unionAll(onTheirWayQueuedBefore(trx, watermark, scope, since ?? undefined));
          const rows = await counts.execute();
          const byState = Object.fromEntries(DELIVERY_STATES.map((s) => [s, 0])) as Record<
            DeliveryState,
            number
          >;
          for (const r of rows) {
            const logged = r.status === 'sent' && Number(r.logged) === 1;
            byState[logged ? 'logged' : r.status] += Number(r.n);
          }
          return byState;
        });
    },
  };
}
