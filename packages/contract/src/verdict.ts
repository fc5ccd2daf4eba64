import type { CallDeliveryState, CallSummary, DeliveryKind, DeliveryState } from './api.js';
import { refusalReason } from './call-reason.js';

/**
 * One verdict for a call and what came of it, the same wherever a call is shown (Send's result,
 * History's row, the call's page, the Audit): what the caller was answered, then, for a call that
 * queued an SMS or pushes, where they stand: "Answered · SMS sent", "Answered · SMS not
 * delivered", "Refused: invalid phone (400)". Its tone is the verdict's, not the wire's: a call
 * answered 200 whose SMS went dead is an error (docs/architecture.md#console-and-api).
 */
export interface CallVerdict {
  readonly text: string;
  /** ok: it reached the phone (or there was nothing to deliver); error: it did not, or the call failed. */
  readonly tone: VerdictTone;
}

export type VerdictTone = 'ok' | 'pending' | 'warn' | 'error';

/** What the verdict reads of a call: what the wire answered, and which operation (what it queues). */
export type VerdictCall = Pick<CallSummary, 'operation' | 'outcome' | 'status' | 'error'>;

/** Where the deliveries a call queued stand: the one furthest from the phone, and how many. */
export interface VerdictDelivery {
  readonly state: CallDeliveryState;
  readonly count: number;
  /** What they carry, when known; else the operation says (AuthCode an SMS, the others pushes). */
  readonly kind?: DeliveryKind | undefined;
}

export const VERDICT_SEPARATOR = ' · ';

/**
 * `delivery`: null when the call queued nothing; undefined while that is not known yet (a call
 * the live tail just added).
 */
export function callVerdict(call: VerdictCall, delivery: VerdictDelivery | null | undefined): CallVerdict {
  if (call.outcome === 'server-error') return { text: `Failed (${call.status})`, tone: 'error' };
  if (call.outcome === 'client-error') {
    const reason = refusalReason(call.error, call.status);
    return {
      text: reason ? `Refused: ${reason} (${call.status})` : `Refused (${call.status})`,
      tone: 'warn',
    };
  }
  if (delivery === null) return { text: 'Answered', tone: 'ok' };
  if (delivery === undefined)
    return { text: `Answered${VERDICT_SEPARATOR}checking its delivery`, tone: 'pending' };
  const { text, tone } = deliveryVerdict(call.operation, delivery);
  return { text: `Answered${VERDICT_SEPARATOR}${text}`, tone };
}

/** AuthCode queues an SMS; the notification operations queue pushes. */
function noun(operation: string | null, { count, kind }: VerdictDelivery): string {
  if ((kind ?? (operation === 'AuthCode' ? 'sms' : 'push')) === 'sms')
    return count > 1 ? `${count} SMS` : 'SMS';
  return count > 1 ? `${count} pushes` : 'push';
}

/**
 * The deliveries' part. With several, the state shown is the worst one's, so what failed is said
 * of "not all" of them, never of every one.
 */
function deliveryVerdict(operation: string | null, delivery: VerdictDelivery): CallVerdict {
  const what = noun(operation, delivery);
  const several = delivery.count > 1;
  switch (delivery.state) {
    case 'waiting':
      return { text: `${what} queued`, tone: 'pending' };
    case 'sending':
      return { text: `${what} being sent`, tone: 'pending' };
    case 'retrying':
      return {
        text: several ? `${what}: not all sent yet, retrying` : `${what} not sent yet, retrying`,
        tone: 'warn',
      };
    case 'sent':
      return { text: `${what} sent`, tone: 'ok' };
    case 'logged':
      return { text: `${what} logged, not sent`, tone: 'warn' };
    case 'dead':
      return { text: several ? `${what}: not all delivered` : `${what} not delivered`, tone: 'error' };
    case 'expired':
      return {
        text: several ? `${what}: not all delivered, too late` : `${what} not delivered, too late`,
        tone: 'error',
      };
  }
}

/**
 * Which delivery a call shows when it has several: the one furthest from reaching the phone (the
 * server's History list orders them by the same list, outbox/deliveries.ts).
 */
export const SHOWN_FIRST: readonly CallDeliveryState[] = [
  'dead',
  'expired',
  'retrying',
  'sending',
  'waiting',
  'logged',
  'sent',
];

/** A delivery's state as staff read it beside its call: a pending one waits, or retries after a failure. */
export function callDeliveryState(delivery: { status: DeliveryState; attempts: number }): CallDeliveryState {
  if (delivery.status === 'pending') return delivery.attempts > 0 ? 'retrying' : 'waiting';
  return delivery.status;
}

/**
 * Where a call's deliveries stand, from the deliveries themselves (as the API lists them): the
 * worst one (whose error says why); null when there are none.
 */
export function worstDelivery<D extends { status: DeliveryState; attempts: number; kind?: DeliveryKind }>(
  deliveries: readonly D[],
): { readonly delivery: VerdictDelivery; readonly worst: D } | null {
  let worst: D | undefined;
  let rank = Number.POSITIVE_INFINITY;
  for (const d of deliveries) {
    const r = SHOWN_FIRST.indexOf(callDeliveryState(d));
    if (r < rank) [worst, rank] = [d, r];
  }
  if (!worst) return null;
  const kind = worst.kind;
  const one = deliveries.every((d) => d.kind === kind);
  return {
    delivery: { state: callDeliveryState(worst), count: deliveries.length, kind: one ? kind : undefined },
    worst,
  };
}
