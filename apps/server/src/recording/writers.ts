import { sql } from 'kysely';
import type { CallDeliveries, Enqueue, Enqueued, NewDelivery } from '../outbox/index.js';
import {
  announceCalls,
  CALL_COLUMNS,
  isPartitionAttachedMeanwhile,
  type NewCall,
  type Store,
} from '../store/index.js';

/** A call waiting for its batch's commit. */
export interface Pending {
  readonly call: NewCall;
  readonly deliveries: readonly NewDelivery[] | undefined;
  readonly resolve: (id: number) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Commits a batch of calls with their deliveries in one unit of work and answers their ids, in
 * order, once it is durable (the dialect's piece of the call recorder: the hot write of every
 * request).
 */
export type BatchWriter = (batch: readonly Pending[]) => Promise<number[]>;

/** Columns a new call may leave out (better-sqlite3 wants every named parameter bound). */
export const NULLABLE_DEFAULTS = {
  operation: null,
  user_agent: null,
  params: null,
  phone: null,
  error: null,
  note: null,
  request_id: null,
  school_id: null,
  response_ref: null,
};

/** Rows per INSERT on PostgreSQL: 19 columns × 500 stays far below its 65 535 parameters. */
const INSERT_CHUNK = 500;

/** The deliveries of a batch, by the ids its calls were given, each of its call's school. */
function deliveriesOf(batch: readonly Pending[], ids: readonly number[]): CallDeliveries[] {
  const calls: CallDeliveries[] = [];
  for (let i = 0; i < batch.length; i++) {
    const { call, deliveries: items } = batch[i] as Pending;
    if (items && items.length > 0)
      calls.push({ callId: ids[i] as number, schoolId: call.school_id ?? null, items });
  }
  return calls;
}

/**
 * SQLite: the insert is prepared once and run on better-sqlite3 directly, the whole batch one
 * synchronous transaction in the store's durable unit of work (under Kysely's connection, the WAL
 * flushed off the event loop with SQLITE_SYNCHRONOUS=FULL). The outbox adds each call's deliveries
 * in the same transaction, claiming those it has room for, and is told once it is durable.
 */
export function sqliteWriter(store: Store, enqueue: Enqueue): BatchWriter {
  const sqlite = store.sqlite;
  if (!sqlite) throw new Error('sqliteWriter: not a SQLite store');
  const insert = sqlite.prepare(
    `INSERT INTO calls (${CALL_COLUMNS.join(', ')}) VALUES (${CALL_COLUMNS.map((c) => `@${c}`).join(', ')})`,
  );
  return async (batch) => {
    const now = Date.now();
    let enqueued: Enqueued | undefined;
    let ids: number[];
    try {
      // Named, as the other steps of a call are, for CPU profiles (bench/stages.mjs).
      ids = await store.work.durableSync(function insertCalls(tx) {
        const inserted = batch.map(({ call }) =>
          Number(insert.run({ ...NULLABLE_DEFAULTS, ...call }).lastInsertRowid),
        );
        // Called with no deliveries too: the outbox's finished attempts ride in every commit.
        enqueued = enqueue(tx, deliveriesOf(batch, inserted), now);
        return inserted;
      });
    } catch (err) {
      enqueued?.failed();
      throw err;
    }
    enqueued?.committed();
    return ids;
  };
}

/**
 * PostgreSQL: the batch's ids are drawn from the sequence first, then the calls and their
 * deliveries (the outbox's rows) go in multi-row INSERTs, and the commit announces the ids to the
 * other instances (NOTIFY is delivered on commit, and only then).
 */
export function postgresWriter(store: Store, enqueue: Enqueue): BatchWriter {
  return async (batch) => {
    try {
      return await writeOnPostgres(store, enqueue, batch);
    } catch (err) {
      // Once more when a partition was attached under the batch (store/partitions.ts): the
      // batch's rows then go to it.
      if (!isPartitionAttachedMeanwhile(err)) throw err;
      return writeOnPostgres(store, enqueue, batch);
    }
  };
}

async function writeOnPostgres(store: Store, enqueue: Enqueue, batch: readonly Pending[]): Promise<number[]> {
  const now = Date.now();
  let added: Enqueued | undefined;
  let written: number[];
  try {
    written = await store.work.durable(async (tx) => {
      const drawn = await sql<{ id: number }>`SELECT nextval(pg_get_serial_sequence('calls', 'id')) AS id
        FROM generate_series(1, ${batch.length})`.execute(tx.trx);
      const ids = drawn.rows.map((r) => Number(r.id)).sort((a, b) => a - b);
      const calls = batch.map(({ call }, i) => ({ ...NULLABLE_DEFAULTS, ...call, id: ids[i] as number }));
      for (let i = 0; i < calls.length; i += INSERT_CHUNK)
        await tx.trx
          .insertInto('calls')
          .values(calls.slice(i, i + INSERT_CHUNK))
          .execute();
      added = await enqueue(tx, deliveriesOf(batch, ids), now);
      // Other instances claim what was left pending (and show the calls in their live tails).
      await announceCalls(tx, store.instance, ids, added.pending > 0);
      return ids;
    });
  } catch (err) {
    added?.failed();
    throw err;
  }
  added?.committed();
  return written;
}
