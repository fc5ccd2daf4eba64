import { type QueryCreator, type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { type Database, type SchoolScope, schoolCondition } from '../store/index.js';
import { ON_THEIR_WAY } from './states.js';

/**
 * The deliveries as the Dashboard counts them (stats/delivery-rollups.ts): grouped by when they
 * were queued, by status and by whether the `log` provider took them, and how far back the
 * deliveries on their way go. The statistics make their roll-ups and counts from these reads; the
 * outbox alone queries its tables. A `scope` reads the deliveries of those schools only (a member
 * of staff limited to schools: store/school-scope.ts); undefined or null, every delivery.
 */

/** 1 when the `log` provider took a delivery (written to the log, nothing sent), else 0. */
const loggedSql = sql<number>`CASE WHEN ${sql.ref('provider')} = 'log' THEN 1 ELSE 0 END`;

/** The statuses on their way as literals: the planner matches them to migration 0022's index. */
const onTheirWay = () => ON_THEIR_WAY.map((s) => sql.lit(s));

/**
 * The deliveries of `scope`'s schools (all of them when it is undefined or null); `seek: false`
 * when another index finds the few deliveries to test (schoolCondition).
 */
const inScopeOf = <O>(
  qb: SelectQueryBuilder<Database, 'deliveries', O>,
  scope: SchoolScope | undefined,
  seek = true,
) => {
  const schools = schoolCondition(scope, { seek });
  return schools ? qb.where(schools) : qb;
};

/** The caller's buckets of time: the SQL of the bucket a time column's value falls in. */
export type BucketOf = (column: 'created_at') => RawBuilder<number>;

/**
 * The deliveries queued in [from, to), grouped by `bucket`, status and `logged`, with how many
 * there are and their attempts (null when none was made).
 */
export const deliveryGroupsQueued = (
  db: QueryCreator<Database>,
  bucket: BucketOf,
  from: number,
  to: number,
  scope?: SchoolScope,
) =>
  inScopeOf(db.selectFrom('deliveries'), scope)
    .select((eb) => [
      bucket('created_at').as('bucket'),
      'status',
      loggedSql.as('logged'),
      eb.fn.countAll<number>().as('count'),
      eb.fn.sum<number>('attempts').as('attempts'),
    ])
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .groupBy(['bucket', 'status', 'logged']);

/**
 * The same for whole hours, as the hourly roll-ups keep them: the rows of `hour`, status,
 * `logged`, `count`, `attempts` (0 when none was made), for an INSERT … SELECT.
 */
export const hourlyDeliveryGroups = (db: QueryCreator<Database>, hour: BucketOf, from: number, to: number) =>
  db
    .selectFrom('deliveries')
    .select((eb) => [
      hour('created_at').as('hour'),
      'status',
      loggedSql.as('logged'),
      eb.fn.countAll<number>().as('count'),
      eb.fn.coalesce(eb.fn.sum<number>('attempts'), sql.lit(0)).as('attempts'),
    ])
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .groupBy([sql`1`, 'status', sql`3`]);

/**
 * The same per school, for the roll-ups per school: the rows of `hour`, `school_id`, status,
 * `logged`, `count`, `attempts`, of the deliveries that belong to a school.
 */
export const hourlySchoolDeliveryGroups = (
  db: QueryCreator<Database>,
  hour: BucketOf,
  from: number,
  to: number,
) =>
  db
    .selectFrom('deliveries')
    .select((eb) => [
      hour('created_at').as('hour'),
      sql<number>`school_id`.as('school_id'),
      'status',
      loggedSql.as('logged'),
      eb.fn.countAll<number>().as('count'),
      eb.fn.coalesce(eb.fn.sum<number>('attempts'), sql.lit(0)).as('attempts'),
    ])
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .where('school_id', 'is not', null)
    .groupBy([sql`1`, 'school_id', 'status', sql`4`]);

/**
 * The deliveries queued since `since`, counted by status and `logged` (column `n`). Bounded above
 * too: SQLite, which keeps no statistics, took a range bounded below only for most of the table and
 * grouped by reading `deliveries_due` (status first) whole, every delivery kept, at each Deliveries
 * page (docs/performance.md#what-each-index-costs-and-serves); bounded both ways, it reads the
 * deliveries since `since` through `deliveries_created_at`.
 */
export const countsQueuedSince = (db: QueryCreator<Database>, since: number, scope?: SchoolScope) =>
  inScopeOf(db.selectFrom('deliveries'), scope)
    .select((eb) => ['status', loggedSql.as('logged'), eb.fn.countAll<number>().as('n')])
    .where('created_at', '>=', since)
    .where('created_at', '<=', Number.MAX_SAFE_INTEGER)
    .groupBy(['status', sql`2`]);

/**
 * The deliveries on their way queued before `before` (and from `from`, when the oldest on its way
 * is known: on PostgreSQL the partitions before it are left out of the plan), counted by status
 * (`logged` 0), found through the index of the deliveries on their way (PostgreSQL, 0022).
 */
export const onTheirWayQueuedBefore = (
  db: QueryCreator<Database>,
  before: number,
  scope?: SchoolScope,
  from?: number,
) => {
  // The few on their way through their index (deliveries_due, 0022's), the school tested on them.
  let q = inScopeOf(db.selectFrom('deliveries'), scope, false)
    .select((eb) => ['status', sql.lit(0).as('logged'), eb.fn.countAll<number>().as('n')])
    .where('status', 'in', onTheirWay())
    .where('created_at', '<', before);
  if (from !== undefined) q = q.where('created_at', '>=', from);
  return q.groupBy('status');
};

/** When the oldest delivery kept was queued (epoch ms); null when none is. */
export async function oldestQueuedAt(db: QueryCreator<Database>): Promise<number | null> {
  const oldest = await db
    .selectFrom('deliveries')
    .select('created_at')
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirst();
  return oldest ? Number(oldest.created_at) : null;
}

/**
 * When the oldest delivery on its way was queued (epoch ms), null when none is, on both databases
 * (on-their-way.ts has the outbox's own bound, PostgreSQL's alone): one probe per partition of the
 * index of the deliveries on their way (PostgreSQL, 0022), whatever the table holds.
 */
export async function oldestOnTheirWayAt(db: QueryCreator<Database>): Promise<number | null> {
  const row = await db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.min<number>('created_at').as('at'))
    .where('status', 'in', onTheirWay())
    .executeTakeFirst();
  return row?.at === null || row?.at === undefined ? null : Number(row.at);
}
