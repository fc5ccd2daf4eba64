import { type ExpressionBuilder, sql } from 'kysely';
import type { Database } from '../store/index.js';
import { QUEUED_WITHIN_MS } from './schema.js';
import { FAILED, ON_THEIR_WAY } from './states.js';

/**
 * Conditions on calls by their deliveries, for the code that reads or deletes calls (History's
 * delivery filter, retention): the outbox alone queries its tables, the others AND these in.
 */

/** A call with a delivery on its way: retention keeps it until the delivery settles. */
export const callHasDeliveryOnItsWay = (eb: ExpressionBuilder<Database, 'calls'>) =>
  eb.exists(
    eb
      .selectFrom('deliveries')
      .select('deliveries.id')
      .whereRef('deliveries.call_id', '=', 'calls.id')
      .where('deliveries.status', 'in', [...ON_THEIR_WAY]),
  );

/**
 * A call with a delivery that failed (FAILED: it did not reach the phone or topic and will not by
 * itself), read through the index of the failed deliveries by time (`deliveries_failed_at`,
 * migration 0021, whose predicate is this list). `from` and `to` bound the calls' time (`to`
 * exclusive): a call's deliveries are queued in its commit (QUEUED_WITHIN_MS), so the same bounds
 * on the deliveries change no result, and on PostgreSQL keep each time window's lookup to its own
 * partitions.
 */
export function callHasFailedDelivery(
  eb: ExpressionBuilder<Database, 'calls'>,
  calls: { readonly from?: number | undefined; readonly to?: number | undefined },
) {
  let failed = eb
    .selectFrom('deliveries')
    .select('deliveries.call_id')
    // Literals, not parameters: the planner matches them to the index's predicate (0021).
    .where(
      'deliveries.status',
      'in',
      FAILED.map((s) => sql.lit(s)),
    );
  if (calls.from !== undefined) failed = failed.where('deliveries.created_at', '>=', calls.from);
  if (calls.to !== undefined)
    failed = failed.where('deliveries.created_at', '<', calls.to + QUEUED_WITHIN_MS);
  return eb('id', 'in', failed);
}

/**
 * `callHasFailedDelivery` as SQL text over `calls`, without bounds, for the SQLite search worker
 * (history/search-worker.mjs), which runs untyped JavaScript in a thread of its own.
 */
export const CALL_HAS_FAILED_DELIVERY_SQL = `id IN (SELECT call_id FROM deliveries WHERE status IN (${FAILED.map((s) => `'${s}'`).join(', ')}))`;
