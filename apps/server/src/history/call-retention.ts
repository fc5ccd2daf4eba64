import type { Kysely, Transaction } from 'kysely';
import { callHasDeliveryOnItsWay } from '../outbox/index.js';
import type { Database } from '../store/index.js';

/**
 * Retention's batches of calls (plugins/retention.ts; on PostgreSQL what no period partition
 * holds, store/partitions.ts): the oldest calls before a time go, a batch per transaction, each
 * after `alongside` has deleted in the same transaction what refers to them (their deliveries:
 * the outbox owns those). A call whose delivery is still on its way stays until the delivery
 * settles (the outbox's condition).
 */

/** What refers to the calls of a batch, deleted first in its transaction. */
export type Alongside = (trx: Transaction<Database>, callIds: readonly number[]) => Promise<void>;

/** Deletes one batch of the oldest calls before `before`, after what refers to them. */
const deleteBatch = (
  db: Kysely<Database>,
  before: number,
  batch: number,
  alongside: Alongside | undefined,
): Promise<number> =>
  db.transaction().execute(async (trx) => {
    const ids = (
      await trx
        .selectFrom('calls')
        .select('id')
        .where('at', '<', before)
        // A call whose delivery is still on its way stays until the delivery settles.
        .where((eb) => eb.not(callHasDeliveryOnItsWay(eb)))
        .orderBy('at')
        .limit(batch)
        .execute()
    ).map((r) => r.id);
    if (ids.length === 0) return 0;
    await alongside?.(trx, ids);
    await trx.deleteFrom('calls').where('id', 'in', ids).execute();
    return ids.length;
  });

/** Deletes the calls older than `before`, `batch` at a time; answers how many went. */
export async function deleteCallsOlderThan(
  db: Kysely<Database>,
  before: number,
  { batch = 2000, alongside }: { batch?: number; alongside?: Alongside | undefined } = {},
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await deleteBatch(db, before, batch, alongside);
    total += n;
    if (n < batch) return total;
    // Let requests in between batches (SQLite has one connection).
    await new Promise((resolve) => setImmediate(resolve));
  }
}
