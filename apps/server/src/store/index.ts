import type { Kysely } from 'kysely';
import { type CallRepository, createCallRepository } from './calls.js';
import { type DbOptions, openDatabase } from './db.js';
import type { Database } from './schema.js';

export type { CallCursor, CallQuery, CallRow, CallSummaryRow, NewCall, StatsRow } from './calls.js';
export type { Binding, Outcome } from './schema.js';

/** The store: the database and the repositories over it. */
export interface Store {
  readonly db: Kysely<Database>;
  readonly calls: CallRepository;
  /** Cheap round trip, for health checks. */
  ping(): Promise<void>;
  /** Commits what is pending and closes the database. */
  close(): Promise<void>;
}

export async function openStore(options: DbOptions): Promise<Store> {
  const { db, sqlite } = await openDatabase(options);
  const calls = createCallRepository(db, sqlite);
  return {
    db,
    calls,
    async ping() {
      await db.selectFrom('calls').select('id').limit(1).execute();
    },
    async close() {
      await calls.flush();
      await db.destroy();
    },
  };
}
