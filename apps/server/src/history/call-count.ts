import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';
import { applyFilters, type CallQuery } from './call-filters.js';

// History's count (GET /api/calls/count): the calls a filter matches, bounded.

/**
 * How many calls match the filters, counting no further than `bound`: `more` when there are more.
 * Within several schools, school by school: each an equality on the school's index, which carries
 * the filters (migration 0025), where SQLite would take another filter's index for an `IN` and
 * read every call it holds (docs/performance.md#staff-scoped-to-schools).
 */
export async function countCalls(
  db: Kysely<Database>,
  query: Omit<CallQuery, 'q'>,
  bound: number,
): Promise<{ count: number; more: boolean }> {
  const { scope } = query;
  if (scope && scope.length > 1) {
    let count = 0;
    for (const school of scope) {
      const part = await countCalls(db, { ...query, scope: [school] }, bound - count);
      count += part.count;
      if (part.more) return { count: bound, more: true };
    }
    return { count, more: false };
  }
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
