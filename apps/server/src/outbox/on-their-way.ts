import { type Kysely, sql } from 'kysely';
import { type Database, type DialectName, prepared } from '../store/index.js';
import { ON_THEIR_WAY } from './states.js';

/**
 * When the oldest delivery on its way (ON_THEIR_WAY) was queued, null when none is, for the
 * outbox's queries that read only those: given as their `created_at` bound on PostgreSQL, it leaves out of
 * their plans the partitions before it. Planned over a country's 90 days of daily partitions, the
 * claim's planning cost far more than its work at every poll of every lane, nothing to claim or
 * not (docs/performance.md#the-outbox-on-partitions). Read through the index of the
 * deliveries on their way (0022) in a statement planned once per connection.
 *
 * A delivery that goes on its way older than this after it is read (a resend) is missed by that
 * one read only: the next (a poll later) has it. SQLite: undefined (one table: nothing to leave
 * out, and `deliveries_due` finds those on their way).
 */
export async function onTheirWaySince(
  db: Kysely<Database>,
  dialect: DialectName,
): Promise<number | null | undefined> {
  if (dialect !== 'postgres') return undefined;
  const { rows } = await prepared(
    'deliveries_on_their_way_since',
    sql<{
      at: number | null;
    }>`SELECT min(created_at) AS at FROM deliveries WHERE status IN (${sql.join(ON_THEIR_WAY.map((s) => sql.lit(s)))})`,
  ).execute(db);
  const at = rows[0]?.at;
  return at === null || at === undefined ? null : Number(at);
}
