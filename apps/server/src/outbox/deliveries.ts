import { type CallDelivery, type CallDeliveryState, LOG_PROVIDER, SHOWN_FIRST } from '@school/contract';
import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import { type Database, inScope, prepared, type SchoolScope } from '../store/index.js';
import {
  applyDeliveryFilters,
  type DeliveryCursor,
  type DeliveryQuery,
  olderThan,
} from './delivery-filters.js';
import { onTheirWaySince } from './on-their-way.js';
import { type DeliveriesTable, type DeliveryAttemptsTable, QUEUED_WITHIN_MS } from './schema.js';

export type DeliveryRow = Selectable<DeliveriesTable>;
export type AttemptRow = Selectable<DeliveryAttemptsTable>;

export type { DeliveryCursor, DeliveryQuery };

/**
 * What waits in the outbox (for /metrics). The deliveries by state are counted from their hourly
 * roll-ups (stats/delivery-rollups.ts), not here: counted here, that was every delivery kept.
 */
export interface OutboxState {
  /** Pending and due now. */
  readonly due: number;
  /** When the longest-waiting due delivery became due (epoch ms); null when none is due. */
  readonly oldestDueAt: number | null;
}

/**
 * Reading the deliveries, for the console, the metrics and the limits, and what a provider reports
 * later. Every change of a delivery's state is a transition of states.ts, in sql.ts.
 */
export interface DeliveryRepository {
  /**
   * One delivery; undefined when there is none or it is not in `scope` (another school's, or no
   * school's for staff limited to schools): the same answer, so that an id tells nothing.
   */
  findById(id: number, scope?: SchoolScope): Promise<DeliveryRow | undefined>;
  attemptsOf(id: number): Promise<AttemptRow[]>;
  /** Newest first by (created_at, id), after the cursor `after`. */
  search(
    query: DeliveryQuery,
    page: { limit: number; after?: DeliveryCursor | undefined },
  ): Promise<DeliveryRow[]>;
  /** Where each call's deliveries stand (History's list), for the calls that queued any. */
  ofCalls(calls: readonly { readonly id: number; readonly at: number }[]): Promise<Map<number, CallDelivery>>;
  outbox(now: number): Promise<OutboxState>;
  /** How many pushes are pending (what pushNoti will dispatch). */
  pendingPushes(): Promise<number>;
  /**
   * When the newest `limit` SMS to recipients matching `recipient` (exact, or a `+44` prefix
   * with `prefix`) since `since` were queued, newest first.
   */
  recentSms(recipient: string, since: number, limit: number, prefix?: boolean): Promise<number[]>;
  /**
   * Records what `provider` reported later about the message it accepted (`providerId`, its id
   * for it); false if unknown. Only Twilio reports (its status callbacks): only its deliveries are
   * indexed by message id (migration 0027); another provider's would be found by a scan.
   */
  recordProviderStatus(provider: string, providerId: string, status: string, now: number): Promise<boolean>;
}

/** Every column of a delivery, named (a prepared statement never reads `*`: store/prepared.ts). */
const DELIVERY_ROW: Readonly<Record<keyof DeliveryRow, true>> = {
  id: true,
  call_id: true,
  school_id: true,
  kind: true,
  provider: true,
  recipient: true,
  payload: true,
  secret: true,
  status: true,
  attempts: true,
  next_attempt_at: true,
  lease_until: true,
  leased_by: true,
  expires_at: true,
  idempotency_key: true,
  created_at: true,
  updated_at: true,
  provider_id: true,
  provider_status: true,
  unsure_provider: true,
  last_error: true,
  sent_at: true,
};
const DELIVERY_ROW_COLUMNS = sql.join(Object.keys(DELIVERY_ROW).map((c) => sql.ref(c)));

/** No filter and every school's: the Deliveries page as it opens. */
const isUnfiltered = (q: DeliveryQuery): boolean =>
  q.status === undefined &&
  q.kind === undefined &&
  q.provider === undefined &&
  q.callId === undefined &&
  (q.recipient === undefined || q.recipient.trim() === '') &&
  q.from === undefined &&
  q.to === undefined &&
  (q.scope === undefined || q.scope === null);

/**
 * How many page sizes get a statement of their own (`newestFirst`): each connection keeps each
 * one's plan over every partition (about 1 MB on 99 daily partitions). The console asks one size;
 * others, past these, are planned at each request.
 */
const PREPARED_PAGE_SIZES = 4;

/**
 * PostgreSQL: the newest `limit` deliveries of every school, with no filter (the Deliveries page as
 * it opens), in a statement planned once per connection (store/prepared.ts): the limit written in
 * it, one statement for each page size (PREPARED_PAGE_SIZES at most). Planned each time, its merge
 * of every partition's `created_at` index took six times longer to plan than to read
 * (docs/performance.md#the-outbox-on-partitions).
 */
async function newestFirst(db: Kysely<Database>, limit: number): Promise<DeliveryRow[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`newestFirst: ${limit} is no page size`);
  const { rows } = await prepared(
    `deliveries_newest_${limit}`,
    sql<DeliveryRow>`SELECT ${DELIVERY_ROW_COLUMNS} FROM deliveries ORDER BY created_at DESC, id DESC LIMIT ${sql.lit(limit)}`,
  ).execute(db);
  return rows;
}

/** Calls further apart than this start a new stretch of a page's time (`ofCalls`). */
const STRETCH_GAP_MS = 86_400_000;

/**
 * The stretches of time a page's calls cover, oldest first, each with its calls' ids: calls at
 * most STRETCH_GAP_MS apart share one. A page of recent calls is one stretch; one caller's calls
 * over months are a few.
 */
function stretchesOf(
  calls: readonly { readonly id: number; readonly at: number }[],
): { from: number; to: number; ids: number[] }[] {
  const out: { from: number; to: number; ids: number[] }[] = [];
  for (const { id, at } of [...calls].sort((a, b) => a.at - b.at)) {
    const last = out[out.length - 1];
    if (last && at - last.to <= STRETCH_GAP_MS) {
      last.to = at;
      last.ids.push(id);
    } else out.push({ from: at, to: at, ids: [id] });
  }
  return out;
}

/** How far back a provider's report about a message is looked for first (recordProviderStatus). */
const RECENT_REPORT_MS = 3 * 86_400_000;

/**
 * Retention: deletes the deliveries of the calls `callIds`, and their attempts, in the transaction
 * that deletes the calls (history/call-retention.ts), before it does.
 */
export async function deleteForCalls(trx: Transaction<Database>, callIds: readonly number[]): Promise<void> {
  const ids = [...callIds];
  await trx
    .deleteFrom('delivery_attempts')
    .where('delivery_id', 'in', trx.selectFrom('deliveries').select('id').where('call_id', 'in', ids))
    .execute();
  await trx.deleteFrom('deliveries').where('call_id', 'in', ids).execute();
}

/**
 * A delivery's state as staff read it beside its call: a pending one is `waiting` before its
 * first attempt and `retrying` after one failed; the `log` provider's sent one is `logged`.
 */
function callDeliveryState(row: Pick<DeliveryRow, 'status' | 'provider' | 'attempts'>): CallDeliveryState {
  if (row.status === 'pending') return row.attempts > 0 ? 'retrying' : 'waiting';
  if (row.status === 'sent' && row.provider === LOG_PROVIDER) return 'logged';
  return row.status;
}

/** The deliveries' reads, one implementation for both databases (filters in delivery-filters.ts). */
export function createDeliveryRepository(
  db: Kysely<Database>,
  dialect: 'sqlite' | 'postgres',
): DeliveryRepository {
  /** The page sizes `newestFirst` has a statement for. */
  const sizes = new Set<number>();
  const preparedSize = (limit: number): boolean => {
    if (sizes.has(limit)) return true;
    if (sizes.size >= PREPARED_PAGE_SIZES) return false;
    sizes.add(limit);
    return true;
  };
  return {
    async pendingPushes() {
      // On their way, so from the oldest delivery on its way on (on-their-way.ts).
      const since = await onTheirWaySince(db, dialect);
      if (since === null) return 0;
      let pending = db
        .selectFrom('deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'pending')
        .where('kind', '=', 'push');
      if (since !== undefined) pending = pending.where('created_at', '>=', since);
      return Number((await pending.executeTakeFirstOrThrow()).n);
    },
    async recentSms(recipient, since, limit, prefix = false) {
      const rows = await db
        .selectFrom('deliveries')
        .select('created_at')
        .where('kind', '=', 'sms')
        .where('recipient', prefix ? 'like' : '=', prefix ? `${recipient}%` : recipient)
        .where('created_at', '>=', since)
        .orderBy('created_at', 'desc')
        .limit(limit)
        .execute();
      return rows.map((r) => Number(r.created_at));
    },
    async recordProviderStatus(provider, providerId, status, now) {
      // A provider reports within hours of sending: the last days' deliveries first (on
      // PostgreSQL, their few partitions), then all of them for a late report.
      for (const since of [now - RECENT_REPORT_MS, undefined]) {
        let update = db
          .updateTable('deliveries')
          .set({ provider_status: status, updated_at: now })
          .where('provider_id', '=', providerId)
          .where('provider', '=', provider);
        if (since !== undefined) update = update.where('created_at', '>=', since);
        const result = await update.executeTakeFirst();
        if (Number(result.numUpdatedRows) > 0) return true;
      }
      return false;
    },
    async findById(id, scope) {
      const row = await db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirst();
      return row && inScope(scope, row.school_id) ? row : undefined;
    },
    attemptsOf(id) {
      return db
        .selectFrom('delivery_attempts')
        .selectAll()
        .where('delivery_id', '=', id)
        .orderBy('id')
        .execute();
    },
    async search(query, page) {
      if (dialect === 'postgres' && !page.after && isUnfiltered(query) && preparedSize(page.limit))
        return newestFirst(db, page.limit);
      let qb = applyDeliveryFilters(db.selectFrom('deliveries').selectAll(), query, dialect);
      if (page.after) qb = qb.where(olderThan(page.after));
      return qb.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).execute();
    },
    async ofCalls(calls) {
      const byCall = new Map<number, CallDelivery>();
      if (calls.length === 0) return byCall;
      // One query for a page of calls, through the deliveries' call_id index, within the times
      // their deliveries were queued (QUEUED_WITHIN_MS), a part for each stretch of the page's
      // time: on PostgreSQL each is planned over its own partitions. A page of one caller's calls
      // may span 90 days; bounded by its oldest and newest call, the lookup would be planned over
      // every daily partition between, and with one OR of the stretches each partition would weigh
      // every stretch (docs/performance.md#the-outbox-on-partitions).
      const parts = stretchesOf(calls).map(({ from, to, ids }) =>
        db
          .selectFrom('deliveries')
          .select(['call_id', 'status', 'provider', 'attempts'])
          .where('call_id', 'in', ids)
          .where('created_at', '>=', from)
          .where('created_at', '<=', to + QUEUED_WITHIN_MS),
      );
      const [first, ...more] = parts;
      if (!first) return byCall;
      const rows = await more.reduce((query, part) => query.unionAll(part), first).execute();
      for (const row of rows) {
        const state = callDeliveryState(row);
        const seen = byCall.get(row.call_id);
        if (!seen) byCall.set(row.call_id, { state, count: 1 });
        else {
          seen.count += 1;
          if (SHOWN_FIRST.indexOf(state) < SHOWN_FIRST.indexOf(seen.state)) seen.state = state;
        }
      }
      return byCall;
    },
    async outbox(now) {
      const due = await db
        .selectFrom('deliveries')
        .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('next_attempt_at').as('oldest')])
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .executeTakeFirstOrThrow();
      return {
        due: Number(due.n),
        oldestDueAt: due.oldest === null || due.oldest === undefined ? null : Number(due.oldest),
      };
    },
  };
}
