import { CompiledQuery } from 'kysely';
import type { CallDeliveries, Enqueue, Enqueued, NewDelivery } from '../outbox/index.js';
import {
  announceCallsPart,
  announcedBy,
  CALL_COLUMNS,
  isPartitionAttachedMeanwhile,
  jsonParameter,
  type NewCall,
  preparedText,
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

/** Columns a new call may leave out, null in its row. */
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

/**
 * The deliveries of a batch, each call's by `ids` (its id; on PostgreSQL its place in the batch,
 * its id drawn in the statement), each of its call's school.
 */
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
    `INSERT INTO calls (${CALL_COLUMNS.join(', ')}) VALUES (${CALL_COLUMNS.map(() => '?').join(', ')})`,
  );
  // Bound by position, a column left out as null: a named binding of a copy with every column
  // (the object spread and a lookup by name for each) cost as much as SQLite's own insert.
  const values = (call: NewCall): unknown[] => CALL_COLUMNS.map((c) => call[c] ?? null);
  return async (batch) => {
    const now = Date.now();
    let enqueued: Enqueued | undefined;
    let ids: number[];
    try {
      // Named, as the other steps of a call are, for CPU profiles (bench/stages.mjs).
      ids = await store.work.durableSync(function insertCalls(tx) {
        const inserted = batch.map(({ call }) => Number(insert.run(values(call)).lastInsertRowid));
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
 * PostgreSQL: the batch in one statement, which is its own transaction: one round trip a batch,
 * durable once answered (store.work.durableStatement). It is composed once of its owners' parts
 * (store/statement-parts.ts), each naming only its own tables: the calls here, drawing their ids
 * from the sequence in the batch's order and inserting them; the outbox's (outbox/enqueue.ts:
 * the deliveries, their claims, the attempts finished since the last commit); the store's
 * announcement of the ids to the other instances (NOTIFY is delivered on commit, and only then).
 * Its text is the same for every batch, the rows in JSON parameters: a prepared statement, planned
 * once per connection. The calls' columns are CALL_COLUMNS, typed by the table itself.
 */
export function postgresWriter(store: Store, enqueue: Enqueue): BatchWriter {
  const outbox = enqueue.postgres;
  const own = outbox.part(NEW_CALLS, 2);
  const announce = announceCallsPart(NEW_CALLS, 2 + own.parameters);
  const columns = CALL_COLUMNS.join(', ');
  const text = preparedText(
    'record_calls',
    `WITH ${NEW_CALLS} AS (
        SELECT nextval((SELECT pg_get_serial_sequence('calls', 'id'))::regclass) AS id,
          c.ordinality AS ord, ${CALL_COLUMNS.map((c) => `c.${c}`).join(', ')}
        FROM json_populate_recordset(NULL::calls, $1::json) WITH ORDINALITY AS c
        ORDER BY c.ordinality),
      recording_inserted AS (INSERT INTO calls (id, ${columns}) SELECT id, ${columns} FROM ${NEW_CALLS}),
      ${own.ctes},
      ${announce.ctes}
    SELECT (SELECT json_agg(id ORDER BY ord) FROM ${NEW_CALLS}) AS recording_ids,
      ${own.columns}, ${announce.columns}`,
  );

  async function write(batch: readonly Pending[]): Promise<number[]> {
    const now = Date.now();
    // Each call's deliveries by its place in the batch: its id is drawn in the statement.
    const places = batch.map((_, i) => i + 1);
    const bound = outbox.bind(deliveriesOf(batch, places), now);
    let row: Readonly<Record<string, unknown>> | undefined;
    try {
      const values = [
        jsonParameter(batch.map((p) => p.call)),
        ...bound.values,
        ...announcedBy(store.instance, bound.pending > 0),
      ];
      const query = CompiledQuery.raw(text, values);
      row = (await store.work.durableStatement<Record<string, unknown>>(query)).rows[0];
    } catch (err) {
      bound.failed();
      throw err;
    }
    bound.committed(row ?? {});
    return (row?.recording_ids ?? []) as number[];
  }

  return async (batch) => {
    try {
      return await write(batch);
    } catch (err) {
      // Once more when a partition was attached under the batch (store/partitions.ts): the
      // batch's rows then go to it.
      if (!isPartitionAttachedMeanwhile(err)) throw err;
      return write(batch);
    }
  };
}

/** The batch's new calls in the statement, as its parts read them: (ord, id) and their columns. */
const NEW_CALLS = 'recording_calls';
