import type { AttemptOutcome, DeliveryKind, DeliveryStatus } from '@school/contract';
import type { Generated } from 'kysely';

/**
 * The outbox's tables: `deliveries` and `delivery_attempts`. The outbox declares them here, makes
 * them in its migrations (migrations.ts, run by the store's migrator in their place among the
 * store's own) and is the only code that queries them: History, the statistics and retention use
 * the reads and conditions it exports (index.ts). They are added to the store's `Database` type
 * below, so that one Kysely handle reaches every table.
 */

// The columns' value sets are the contract's (one list each, shared with the API and console).
export type { AttemptOutcome, DeliveryKind, DeliveryStatus };

/**
 * A delivery is queued in its call's own commit (recording/writers.ts): its `created_at` is at
 * least its call's `at` and at most this much after it (a request waits seconds at most for the
 * database; an hour leaves room for clocks). Reads of a call's deliveries bound them by it, so
 * that PostgreSQL plans them over a few partitions.
 */
export const QUEUED_WITHIN_MS = 3_600_000;

export interface DeliveriesTable {
  id: Generated<number>;
  call_id: number;
  /**
   * The school its call belongs to (`calls.school_id`), set as it is queued: whose staff see it
   * (store/school-scope.ts). Null when the call belongs to none, and for deliveries queued before
   * calls had a school (migration 0025).
   */
  school_id: number | null;
  kind: DeliveryKind;
  /**
   * The provider its next (or current) attempt goes to: the kind's provider when queued, the
   * fallback after a failover (`log`, `twilio`, `http`, `twilio-fallback`, `fcm`, …).
   */
  provider: string;
  /** E.164 phone for SMS, topic for pushes. */
  recipient: string;
  /** JSON of the kind's payload: read and written only by parseDeliveryPayload / deliveryPayloadJson (payload.ts). */
  payload: string;
  /**
   * An SMS's text (it holds the auth code), sealed (secrets/sealer.ts) for the idempotency key;
   * null for pushes and once the SMS has settled (sent or expired) or can no longer be retried.
   */
  secret: string | null;
  /** pending waits for next_attempt_at; sending is claimed until lease_until (states.ts). */
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number;
  lease_until: number | null;
  /** The instance whose attempt holds it while `sending` (its heartbeat keeps the claim). */
  leased_by: string | null;
  /** Auth codes only: not sent after this (epoch ms). */
  expires_at: number | null;
  /** Stable across retries; the provider sees it where it supports one. */
  idempotency_key: string;
  provider_id: string | null;
  /** What the provider reported later (e.g. Twilio's `delivered`, `undelivered (30003)`). */
  provider_status: string | null;
  /**
   * The first provider whose attempt ended without knowing whether it took the message (a
   * timeout, a connection lost after the request went out): sent later by another, it may have
   * arrived twice.
   */
  unsure_provider: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  sent_at: number | null;
}

export interface DeliveryAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  /** The provider this attempt went to (null: recorded before providers were recorded per attempt). */
  provider: string | null;
  started_at: number;
  finished_at: number | null;
  /** Null while the attempt is under way. */
  outcome: AttemptOutcome | null;
  status: number | null;
  error: string | null;
  response: string | null;
  retry_after_ms: number | null;
}

declare module '../store/index.js' {
  /** The outbox's tables, beside the store's own (store/schema.ts). */
  interface Database {
    deliveries: DeliveriesTable;
    delivery_attempts: DeliveryAttemptsTable;
  }
}
