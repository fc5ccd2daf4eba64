import type { DeliveryStatus } from './schema.js';

/**
 * A delivery's life (docs/outbox.md): the statuses it can have and every event
 * that moves it, as data. The outbox's SQL takes its conditions from this table (`from`), so a
 * transition the table does not allow is one no statement makes.
 *
 *   pending ──claim──▶ sending ──sent──▶ sent      sending ──hedge──▶ sending
 *      ▲ ▲                │ │
 *      │ └──retry─────────┘ └──fail──▶ dead ──forget──▶ dead (text destroyed)
 *      │ └──interrupt─────┘              │
 *      └──resend───────────────────────── ┘
 *   pending ──expire──▶ expired
 */
export type OutboxEvent =
  /** An attempt starts: by a dispatcher's claim, or in the call's own commit (the hand-off). */
  | 'claim'
  /**
   * A code's attempt on the primary has not answered within SMS_HEDGE_AFTER: a second attempt, on
   * the fallback, starts beside it under the same claim (outbox/hedge.ts).
   */
  | 'hedge'
  /** The provider accepted the message. */
  | 'sent'
  /** A transient failure with attempts and validity left: pending again, due later. */
  | 'retry'
  /** A permanent failure, or the last attempt failed: dead (staff may resend it). */
  | 'fail'
  /**
   * The attempt was cut short: its lease ran out, or its instance went silent or stopped. Pending
   * again, at once, with the same idempotency key; the attempt is recorded `interrupted`.
   */
  | 'interrupt'
  /** An auth code past its validity before it was sent: never sent late. */
  | 'expire'
  /** A dead auth code past its validity: its sealed text is destroyed; it can no longer be resent. */
  | 'forget'
  /** Staff resend a dead delivery: pending with a fresh set of attempts. */
  | 'resend'
  /** pushNoti: a pending push is due now, retries included. */
  | 'due-now';

export interface Transition {
  readonly from: readonly DeliveryStatus[];
  readonly to: DeliveryStatus;
}

export const TRANSITIONS: Readonly<Record<OutboxEvent, Transition>> = {
  claim: { from: ['pending'], to: 'sending' },
  hedge: { from: ['sending'], to: 'sending' },
  sent: { from: ['sending'], to: 'sent' },
  retry: { from: ['sending'], to: 'pending' },
  fail: { from: ['sending'], to: 'dead' },
  interrupt: { from: ['sending'], to: 'pending' },
  expire: { from: ['pending'], to: 'expired' },
  forget: { from: ['dead'], to: 'dead' },
  resend: { from: ['dead'], to: 'pending' },
  'due-now': { from: ['pending'], to: 'pending' },
};

/** Where `event` takes a delivery in `status`; undefined when the event cannot happen there. */
export function next(status: DeliveryStatus, event: OutboxEvent): DeliveryStatus | undefined {
  const t = TRANSITIONS[event];
  return t.from.includes(status) ? t.to : undefined;
}

/**
 * On their way: waiting for an attempt (`pending`) or in one (`sending`). Their hours are not
 * rolled up yet (stats/delivery-rollups.ts), retention keeps them with their calls and attempts
 * (history/call-retention.ts, store/partitions.ts), and PostgreSQL indexes them by when they were queued
 * (migration 0022, whose predicate is this list).
 */
export const ON_THEIR_WAY = ['pending', 'sending'] as const satisfies readonly DeliveryStatus[];

/**
 * Failed: it did not reach the phone or topic and will not by itself (`dead`, which staff may
 * resend, or `expired`). History's delivery filter (migration 0021's index has this list).
 */
export const FAILED = ['dead', 'expired'] as const satisfies readonly DeliveryStatus[];

/**
 * Settled: never sent again, and an SMS's sealed text is destroyed. A dead delivery is not
 * settled while it can be resent (an auth code: while it is valid).
 */
export const SETTLED: readonly DeliveryStatus[] = ['sent', 'expired'];

export const isSettled = (status: DeliveryStatus): boolean => SETTLED.includes(status);
