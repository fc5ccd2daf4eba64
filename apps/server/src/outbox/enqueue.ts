import type SQLite from 'better-sqlite3';
import type { Sealer } from '../secrets/sealer.js';
import type { Dispatcher } from './dispatcher.js';

/** What the step needs of the dispatcher: a lane's slot for a delivery, and the hand-over. */
export type HandOff = Pick<Dispatcher, 'reserve' | 'release' | 'take' | 'mayBeDue'>;

import type { Lane } from './lanes.js';
import { type DeliveryInsert, type NewDelivery, newDeliveryRows } from './payload.js';
import type { Claimed, DeliveryRow } from './sql.js';

/**
 * The outbox's step in the call recorder's transaction (store/calls.ts): a call's deliveries are
 * inserted in the very commit that records the call, so a `200` means both are durable. On SQLite
 * a delivery whose provider's lane has room is claimed in that same commit (`sending`, its attempt
 * row written) and handed to the dispatcher once the commit is durable: no claim pass between the
 * answer and the provider. Without room it is queued `pending` for a claim.
 */
export interface OutboxIntake {
  /** PostgreSQL: the rows of a call's deliveries, for the recorder's multi-row INSERT. */
  rows(callId: number, items: readonly NewDelivery[], now: number): DeliveryInsert[];
  /** SQLite: the statements of the step, prepared once on the recorder's connection. */
  sqlite(handle: SQLite.Database): SqliteIntake;
  /** Deliveries were queued (committed here, or by another instance): the dispatcher looks now. */
  queued(): void;
}

/** One batch of the recorder's (one transaction). */
export interface IntakeBatch {
  /** Lanes taken for claims in the batch's commit (given back if it fails). */
  readonly reserved: Lane[];
  /** Claimed in the batch's commit, with the lane each was claimed for. */
  readonly claimed: { lane: Lane; claimed: Claimed }[];
  /** Queued `pending`, for a claim. */
  queued: number;
}

export interface SqliteIntake {
  begin(): IntakeBatch;
  /** Inside the batch's synchronous transaction: inserts a call's deliveries, claiming what it can. */
  insert(
    batch: IntakeBatch,
    callId: number,
    items: readonly NewDelivery[],
    now: number,
    instance: string,
  ): void;
  /** The batch's commit is durable: what it claimed is sent at once. */
  committed(batch: IntakeBatch): void;
  /** The batch's commit failed (or is not known to be on disk): the lanes taken are free again. */
  failed(batch: IntakeBatch): void;
}

export function createIntake(options: {
  readonly sealer: Sealer;
  readonly dispatcher: HandOff;
  /** How long a claim's lease lasts (ms). */
  readonly leaseMs: number;
}): OutboxIntake {
  const { sealer, dispatcher } = options;
  const prepared = new WeakMap<SQLite.Database, SqliteIntake>();
  return {
    rows: (callId, items, now) => newDeliveryRows(callId, items, now, sealer),
    queued: () => dispatcher.mayBeDue(),
    sqlite(handle) {
      let step = prepared.get(handle);
      if (step) return step;
      const insertDelivery = handle.prepare(
        `INSERT INTO deliveries (call_id, kind, provider, recipient, payload, secret, status, attempts,
           next_attempt_at, lease_until, leased_by, expires_at, idempotency_key, created_at, updated_at)
         VALUES (@call_id, @kind, @provider, @recipient, @payload, @secret, @status, @attempts,
           @next_attempt_at, @lease_until, @leased_by, @expires_at, @idempotency_key, @created_at, @updated_at)`,
      );
      const insertAttempt = handle.prepare(
        'INSERT INTO delivery_attempts (delivery_id, provider, started_at) VALUES (@delivery_id, @provider, @started_at)',
      );
      step = {
        begin: () => ({ reserved: [], claimed: [], queued: 0 }),
        insert(batch, callId, items, now, instance) {
          for (const row of newDeliveryRows(callId, items, now, sealer)) {
            const live = row.expires_at === null || row.expires_at > now;
            const lane = live ? dispatcher.reserve(row.kind, row.provider, now) : undefined;
            if (!lane) {
              insertDelivery.run(row);
              batch.queued++;
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
            batch.reserved.push(lane);
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
            batch.claimed.push({ lane, claimed: { delivery, attemptId } });
          }
        },
        committed(batch) {
          dispatcher.take(batch.claimed);
          if (batch.queued > 0) dispatcher.mayBeDue();
        },
        failed(batch) {
          // Not committed, or not known to be on disk: what was claimed is left to the recovery of
          // `sending` deliveries.
          for (const lane of batch.reserved) dispatcher.release(lane);
        },
      };
      prepared.set(handle, step);
      return step;
    },
  };
}
