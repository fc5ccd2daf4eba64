import type { Sealer } from '../secrets/sealer.js';
import type { PostgresTx, SqliteTx, Store } from '../store/index.js';
import type { DeliveryRow } from './deliveries.js';
import type { Dispatcher } from './dispatcher.js';
import type { Lane } from './lanes.js';
import { type DeliveryInsert, type NewDelivery, newDeliveryRows } from './payload.js';
import type { Claimed } from './sql.js';

/** What the step needs of the dispatcher: a lane's slot for a delivery, and the hand-over. */
export type HandOff = Pick<Dispatcher, 'reserve' | 'release' | 'take' | 'mayBeDue'>;

/** The deliveries one call queues. */
export interface CallDeliveries {
  readonly callId: number;
  readonly items: readonly NewDelivery[];
}

/** Deliveries added in a unit of work that has not ended yet: tell the outbox how it ended. */
export interface Enqueued {
  /** How many were added (on SQLite, claimed ones included). */
  readonly count: number;
  /** The unit of work is durable: what was claimed in it is sent at once, the rest looked for. */
  committed(): void;
  /** It failed (or is not known to be on disk): the lanes' slots taken for it are free again. */
  failed(): void;
}

/**
 * Adds deliveries inside the caller's unit of work (store/unit-of-work.ts), so that they are
 * committed with whatever the caller writes there: the call recorder's group commit (recording/)
 * inserts a call and its deliveries in one transaction, and a `200` means both are durable. On
 * SQLite (synchronous, statements prepared once) a delivery whose provider's lane has room is
 * claimed in that same commit (`sending`, its attempt row written) and handed to the dispatcher
 * once the commit is durable: no claim pass between the answer and the provider. Without room it
 * is queued `pending` for a claim. On PostgreSQL they are queued `pending` in multi-row INSERTs
 * (claims there skip what other instances hold).
 */
export interface Enqueue {
  (tx: SqliteTx, calls: readonly CallDeliveries[], now: number): Enqueued;
  (tx: PostgresTx, calls: readonly CallDeliveries[], now: number): Promise<Enqueued>;
}

/** Rows per INSERT on PostgreSQL: 15 columns × 500 stays far below its 65 535 parameters. */
const INSERT_CHUNK = 500;

const NOTHING: Enqueued = { count: 0, committed() {}, failed() {} };

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
    `INSERT INTO deliveries (call_id, kind, provider, recipient, payload, secret, status, attempts,
       next_attempt_at, lease_until, leased_by, expires_at, idempotency_key, created_at, updated_at)
     VALUES (@call_id, @kind, @provider, @recipient, @payload, @secret, @status, @attempts,
       @next_attempt_at, @lease_until, @leased_by, @expires_at, @idempotency_key, @created_at, @updated_at)`,
  );
  const insertAttempt = handle?.prepare(
    'INSERT INTO delivery_attempts (delivery_id, provider, started_at) VALUES (@delivery_id, @provider, @started_at)',
  );

  /** SQLite, inside the caller's synchronous transaction. */
  function onSqlite(calls: readonly CallDeliveries[], now: number): Enqueued {
    if (!insertDelivery || !insertAttempt) throw new Error('enqueue: not a SQLite store');
    /** Lanes taken for claims in this commit (given back if it fails). */
    const reserved: Lane[] = [];
    /** Claimed in this commit, with the lane each was claimed for. */
    const claimed: { lane: Lane; claimed: Claimed }[] = [];
    let queued = 0;
    try {
      for (const { callId, items } of calls) {
        const rows = newDeliveryRows(callId, items, now, sealer);
        for (let j = 0; j < rows.length; j++) {
          const row = rows[j] as DeliveryInsert;
          const live = row.expires_at === null || row.expires_at > now;
          const lane = live ? dispatcher.reserve(row.kind, row.provider, now) : undefined;
          if (!lane) {
            insertDelivery.run(row);
            queued++;
            continue;
          }
          // The `claim` of states.ts, in the call's own commit.
          const sending = {
            ...row,
            provider: lane.id,
            status: 'sending' as const,
            attempts: 1,
            lease_until: now + options.leaseMs,
            leased_by: instance,
          };
          reserved.push(lane);
          const deliveryId = Number(insertDelivery.run(sending).lastInsertRowid);
          const attemptId = Number(
            insertAttempt.run({ delivery_id: deliveryId, provider: lane.id, started_at: now })
              .lastInsertRowid,
          );
          const delivery: DeliveryRow = {
            ...sending,
            id: deliveryId,
            provider_id: null,
            provider_status: null,
            last_error: null,
            sent_at: null,
          };
          const item = items[j] as NewDelivery;
          const text = item.kind === 'sms' ? item.payload.text : undefined;
          claimed.push({
            lane,
            claimed: text === undefined ? { delivery, attemptId } : { delivery, attemptId, text },
          });
        }
      }
    } catch (err) {
      // The transaction rolls back: the lanes' slots taken so far are free again.
      for (const lane of reserved) dispatcher.release(lane);
      throw err;
    }
    return {
      count: queued + claimed.length,
      committed() {
        dispatcher.take(claimed);
        if (queued > 0) dispatcher.mayBeDue();
      },
      failed() {
        // Not committed, or not known to be on disk: what was claimed is left to the recovery of
        // `sending` deliveries.
        for (const lane of reserved) dispatcher.release(lane);
      },
    };
  }

  /** PostgreSQL, in the caller's transaction: multi-row INSERTs, all pending. */
  async function onPostgres(
    tx: PostgresTx,
    calls: readonly CallDeliveries[],
    now: number,
  ): Promise<Enqueued> {
    const rows = calls.flatMap(({ callId, items }) => newDeliveryRows(callId, items, now, sealer));
    if (rows.length === 0) return NOTHING;
    for (let i = 0; i < rows.length; i += INSERT_CHUNK)
      await tx.trx
        .insertInto('deliveries')
        .values(rows.slice(i, i + INSERT_CHUNK))
        .execute();
    return {
      count: rows.length,
      committed: () => dispatcher.mayBeDue(),
      failed() {},
    };
  }

  return ((tx: SqliteTx | PostgresTx, calls: readonly CallDeliveries[], now: number) =>
    tx.dialect === 'sqlite' ? onSqlite(calls, now) : onPostgres(tx, calls, now)) as Enqueue;
}
