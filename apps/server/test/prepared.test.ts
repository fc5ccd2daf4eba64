/**
 * Statements planned once per connection (src/store/prepared.ts): on PostgreSQL a named prepared
 * statement, its plan kept and reused; on SQLite the same statement, as it is.
 */
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepared } from '../src/store/index.js';
import { DIALECTS, openTestStoresOn, type TestStores } from './pg.js';

describe.each(DIALECTS)('a prepared statement on %s', (dialect) => {
  let stores: TestStores;
  beforeEach(async () => {
    stores = await openTestStoresOn(dialect);
  });
  afterEach(() => stores.close());

  const oldest = prepared(
    'test_deliveries_oldest',
    sql<{
      at: number | null;
    }>`SELECT min(created_at) AS at FROM deliveries WHERE status IN ('pending', 'sending')`,
  );

  it('answers as the statement does, and on PostgreSQL is planned once on its connection', async () => {
    await stores.store.db.connection().execute(async (db) => {
      for (let i = 0; i < 3; i++) expect((await oldest.execute(db)).rows).toEqual([{ at: null }]);
      if (dialect !== 'postgres') return;
      const { rows } = await sql<{ name: string; generic_plans: number; custom_plans: number }>`
        SELECT name, generic_plans::int, custom_plans::int FROM pg_prepared_statements`.execute(db);
      expect(rows).toEqual([{ name: 'test_deliveries_oldest', generic_plans: 3, custom_plans: 0 }]);
    });
  });

  it('takes a plain lower-case name only', () => {
    expect(() => prepared('x */ DROP TABLE calls; /*', sql`SELECT 1`)).toThrow(/not a lower-case name/);
    expect(() => prepared('Upper', sql`SELECT 1`)).toThrow(/not a lower-case name/);
  });
});
