import { sql } from 'kysely';
import type { Sealer } from '../secrets/sealer.js';
import type { PostgresTx, SqliteTx, Store } from '../store/index.js';
import type { DeliveryRow } from './deliveries.js';
import type { Dispatcher } from './dispatcher.js';
import type { RecordedInCommit } from './finished-attempts.js';
import type { Lane } from './lanes.js';
import { type DeliveryInsert, type NewDelivery, newDeliveryRows } from './payload.js';
import type { Claimed } from './sql.js';

/**
 * What the step needs of the dispatcher: a lane's slot for a delivery, the hand-over, and the
 * finished attempts recorded in the same commit.
 */
export type HandOff = Pick<Dispatcher, 'reserve' | 'release' | 'take' | 'mayBeDue' | 'recordFinishedIn'>;

/** The deliveries one call queues. */
export interface CallDeliveries {
  readonly callId: number;
  /** The school the call belongs to: its deliveries are that school's too (null: none). */
  readonly schoolId: number | null;
  readonly items: readonly NewDelivery[];
}

/** Deliveries added in a unit of work that has not ended yet: tell the outbox how it ended. */
export interface Enqueued {
  /** How many were added, claimed ones included. */
  readonly count: number;
  /** How many were left `pending`, for a claim pass (here or, on PostgreSQL, on another instance). */
  readonly pending: number;
  /** The unit of work is durable: what was claimed in it is sent at once, the rest looked for. */
  committed(): void;
  /** It failed (or is not known to be on disk): the lanes' slots taken for it are free again. */
  failed(): void;
}

/**
 * Adds deliveries inside the caller's unit of work (store/unit-of-work.ts), so that they are
 * committed with whatever the caller writes there: the call recorder's group commit (recording/)
 * inserts a call and its deliveries in one transaction, and a `200` means both are durable. A
 * delivery whose provider's lane has room is claimed in that same commit (`sending` under this
 * instance's lease, its attempt row written) and handed to the dispatcher once the commit is
 * durable: no claim pass, and no transaction of its own, between the answer and the provider (a
 * new row is this instance's alone: no other can hold it yet). Without room it is queued
 * `pending` for a claim. SQLite runs prepared statements in the caller's synchronous transaction;
 * PostgreSQL multi-row INSERTs in its transaction.
 */
export interface Enqueue {
  (tx: SqliteTx, calls: readonly CallDeliveries[], now: number): Enqueued;
  (tx: PostgresTx, calls: readonly CallDeliveries[], now: number): Promise<Enqueued>;
}

/** Rows per INSERT on PostgreSQL: 16 columns × 500 stays far below its 65 535 parameters. */
const INSERT_CHUNK = 500;

const NOTHING: Enqueued = { count: 0, pending: 0, committed() {}, failed() {} };

/** A delivery row to insert: `pending`, or claimed for `lane` (with its SMS text, handed over). */
type Planned =
  | { readonly row: DeliveryInsert; readonly lane?: undefined }
  | { readonly row: DeliveryRowInsert; readonly lane: Lane; readonly text: string | undefined };

/** A claimed row as inserted: `sending` under this instance's lease. */
type DeliveryRowInsert = Omit<DeliveryInsert, 'status' | 'attempts' | 'lease_until' | 'leased_by'> & {
  readonly status: 'sending';
  readonly attempts: 1;
  readonly lease_until: number;
  readonly leased_by: string;
};

export function createEnqueue(options: {
  readonly store: Store;
  readonly sealer: Sealer;
  readonly dispatcher: HandOff;
  /** How long a claim's lease lasts (ms). */
  readonly leaseMs: number;
}): Enqueue {
  const { store, sealer, dispatcher } = options;
  const instance = store.instance;
  const handle = store.sqlite;
  const insertDelivery = handle?.prepare(
    `INSERT INTO deliveries (call_id, school_id, kind, provider, recipient, payload, secret, status, attempts,
       next_attempt_at, lease_until, leased_by, expires_at, idempotency_key, created_at, updated_at)
     VALUES (@call_id, @school_id, @kind, @provider, @recipient, @payload, @secret, @status, @attempts,
       @next_attempt_at, @lease_until, @leased_by, @expires_at, @idempotency_key, @created_at, @updated_at)`,
  );
  const insertAttempt = handle?.prepare(
    'INSERT INTO delivery_attempts (delivery_id, provider, started_at) VALUES (@delivery_id, @provider, @started_at)',
  );

  /**
   * Each delivery's row: claimed (the `claim` of states.ts) where its provider's lane has room and
   * it is still live, else `pending`. The lanes' slots are taken here; `release` gives them back.
   */
  function plan(calls: readonly CallDeliveries[], now: number): Planned[] {
    const planned: Planned[] = [];
    try {
      for (const { callId, schoolId, items } of calls) {
        const rows = newDeliveryRows(callId, schoolId, items, now, sealer);
        for (let j = 0; j < rows.length; j++) {
          const row = rows[j] as DeliveryInsert;
          const live = row.expires_at === null || row.expires_at > now;
          const lane = live ? dispatcher.reserve(row.kind, row.provider, now) : undefined;
          if (!lane) {
            planned.push({ row });
            continue;
          }
          const item = items[j] as NewDelivery;
          planned.push({
            row: {
              ...row,
              provider: lane.id,
              status: 'sending',
              attempts: 1,
              lease_until: now + options.leaseMs,
              leased_by: instance,
            },
            lane,
            text: item.kind === 'sms' ? item.payload.text : undefined,
          });
        }
      }
    } catch (err) {
      release(planned);
      throw err;
    }
    return planned;
  }

  /** The lanes' slots taken for a commit that failed are free again. */
  function release(planned: readonly Planned[]): void {
    for (const p of planned) if (p.lane) dispatcher.release(p.lane);
  }

  /** What the caller tells once its unit of work has ended. */
  function enqueued(
    planned: readonly Planned[],
    claimed: { lane: Lane; claimed: Claimed }[],
    finishedInCommit: RecordedInCommit | undefined,
  ): Enqueued {
    if (planned.length === 0 && !finishedInCommit) return NOTHING;
    const pending = planned.length - claimed.length;
    return {
      count: planned.length,
      pending,
      committed() {
        finishedInCommit?.committed();
        dispatcher.take(claimed);
        if (pending > 0) dispatcher.mayBeDue();
      },
      failed() {
        // Not committed, or not known to be on disk: what was claimed is left to the recovery of
        // `sending` deliveries, and the finished attempts are recorded again.
        release(planned);
        finishedInCommit?.failed();
      },
    };
  }

  /** The claimed delivery as the dispatcher receives it: the row as inserted, with its ids. */
  function claimedOf(
    p: Extract<Planned, { lane: Lane }>,
    deliveryId: number,
    attemptId: number,
  ): { lane: Lane; claimed: Claimed } {
    const delivery: DeliveryRow = {
      ...p.row,
      id: deliveryId,
      provider_id: null,
      provider_status: null,
      unsure_provider: null,
      last_error: null,
      sent_at: null,
    };
    return {
      lane: p.lane,
      claimed: p.text === undefined ? { delivery, attemptId } : { delivery, attemptId, text: p.text },
    };
  }

  /** SQLite, inside the caller's synchronous transaction. */
  function onSqlite(tx: SqliteTx, calls: readonly CallDeliveries[], now: number): Enqueued {
    if (!insertDelivery || !insertAttempt) throw new Error('enqueue: not a SQLite store');
    const planned = plan(calls, now);
    const claimed: { lane: Lane; claimed: Claimed }[] = [];
    let finishedInCommit: RecordedInCommit | undefined;
    try {
      finishedInCommit = dispatcher.recordFinishedIn(tx);
      for (const p of planned) {
        const deliveryId = Number(insertDelivery.run(p.row).lastInsertRowid);
        if (!p.lane) continue;
        const attemptId = Number(
          insertAttempt.run({ delivery_id: deliveryId, provider: p.lane.id, started_at: now })
            .lastInsertRowid,
        );
        claimed.push(claimedOf(p, deliveryId, attemptId));
      }
    } catch (err) {
      // The transaction rolls back: the lanes' slots taken are free again.
      release(planned);
      finishedInCommit?.failed();
      throw err;
    }
    return enqueued(planned, claimed, finishedInCommit);
  }

  /** PostgreSQL, in the caller's transaction: one multi-row INSERT of deliveries and their attempts. */
  async function onPostgres(
    tx: PostgresTx,
    calls: readonly CallDeliveries[],
    now: number,
  ): Promise<Enqueued> {
    const planned = plan(calls, now);
    const claimed: { lane: Lane; claimed: Claimed }[] = [];
    let finishedInCommit: RecordedInCommit | undefined;
    try {
      finishedInCommit = await dispatcher.recordFinishedIn(tx);
      for (let i = 0; i < planned.length; i += INSERT_CHUNK) {
        const chunk = planned.slice(i, i + INSERT_CHUNK);
        // One statement: the deliveries, and the attempts of those claimed (a data-modifying CTE).
        const inserted = await tx.trx
          .with('d', (db) =>
            db
              .insertInto('deliveries')
              .values(chunk.map((p) => p.row))
              .returning(['id', 'idempotency_key', 'status', 'provider']),
          )
          .with('a', (db) =>
            db
              .insertInto('delivery_attempts')
              .columns(['delivery_id', 'provider', 'started_at'])
              .expression((eb) =>
                eb
                  .selectFrom('d')
                  .select(['d.id', 'd.provider', sql<number>`${now}::bigint`.as('started_at')])
                  .where('d.status', '=', 'sending'),
              )
              .returning(['id', 'delivery_id']),
          )
          .selectFrom('d')
          .leftJoin('a', 'a.delivery_id', 'd.id')
          .select(['d.id', 'd.idempotency_key', 'a.id as attempt_id'])
          .execute();
        const byKey = new Map(inserted.map((r) => [r.idempotency_key, r]));
        for (const p of chunk) {
          if (!p.lane) continue;
          const row = byKey.get(p.row.idempotency_key);
          claimed.push(claimedOf(p, row?.id as number, row?.attempt_id as number));
        }
      }
    } catch (err) {
      release(planned);
      finishedInCommit?.failed();
      throw err;
    }
    return enqueued(planned, claimed, finishedInCommit);
  }

  return ((tx: SqliteTx | PostgresTx, calls: readonly CallDeliveries[], now: number) =>
    tx.dialect === 'sqlite' ? onSqlite(tx, calls, now) : onPostgres(tx, calls, now)) as Enqueue;
}
