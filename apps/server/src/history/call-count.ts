import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';
import { applyFilters, type CallQuery } from './call-filters.js';

// History's count (GET /api/calls/count): the calls a filter matches, bounded.

/** How many calls match the filters, counting no further than `bound`: `more` when there are more. */
export async function countCalls(
  db: Kysely<Database>,
  query: Omit<CallQuery, 'q'>,
  bound: number,
): Promise<{ count: number; more: boolean }> {
  const row = await db
    .selectFrom(
      applyFilters(db.selectFrom('calls').select('id'), query)
        .limit(bound + 1)
        .as('matching'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const n = Number(row.n);
  return n > bound ? { count: bound, more: true } : { count: n, more: false };
}
