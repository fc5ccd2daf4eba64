import {
  type CallVerdict,
  callDeliveryState,
  callVerdict,
  type Delivery,
  type VerdictCall,
  worstDelivery,
} from '@school/contract';
import { plainFailure } from './plain-failure';

/** The call's one verdict, and why the delivery it speaks of did not go (when it did not). */
export interface ExplainedVerdict extends CallVerdict {
  readonly why?: string | undefined;
}

/**
 * A call's verdict from its deliveries as listed, which are fresher than the call's own summary
 * (its page keeps the call, its deliveries move on) and say why: the worst one's error, in plain words.
 */
export function verdictOfDeliveries(call: VerdictCall, deliveries: readonly Delivery[]): ExplainedVerdict {
  const found = worstDelivery(deliveries);
  const verdict = callVerdict(call, found?.delivery ?? null);
  if (call.outcome !== 'ok' || !found) return verdict;
  return { ...verdict, why: whyNot(found.worst) };
}

/** Why a delivery has not reached the phone; undefined for one on its way or sent. */
export function whyNot(delivery: Delivery): string | undefined {
  const state = callDeliveryState(delivery);
  if (state !== 'dead' && state !== 'expired' && state !== 'retrying') return undefined;
  if (delivery.lastError) return plainFailure(delivery.lastError);
  return state === 'expired' ? 'Not sent within its validity: an auth code is never sent late' : undefined;
}

/** What the wire answered the caller, as a detail beside the verdict: "HTTP 200". */
export const wireAnswer = (call: Pick<VerdictCall, 'status'>): string => `HTTP ${call.status}`;
