import type { ProviderInfo, Stats } from '@school/contract';
import { formatClock } from '../../../lib/format';
import { REFUSAL_REMEDY, type Refusal, refusalWords } from '../../../lib/provider-refusal';
import type { ChartData } from './chart-data';
import { formatCount, formatPercent } from './chart-data';
import { deliveriesHref, historyHref } from './links';

/** One thing on the Dashboard that needs someone's attention, and where to look at it. */
export interface Concern {
  readonly text: string;
  readonly href: string;
  readonly link: string;
}

export interface Verdict {
  readonly ok: boolean;
  /** One line: "All is well" or how many things need attention. */
  readonly headline: string;
  /** The period in figures: calls, errors against the period before. */
  readonly detail: string;
  readonly concerns: readonly Concern[];
}

/** An error rate this much higher than the period before's, and above the floor, is a concern. */
const RISE_FACTOR = 1.5;
const RISE_FLOOR_PERCENT = 1;
/** Without a period before to compare with, this rate on at least this many calls is a concern. */
const HIGH_PERCENT = 20;
const HIGH_MIN_CALLS = 20;

/** Refused codes for the destinations SMS pumping uses, in a period, that make a concern. */
const PUMPING_MIN = 5;
/** The server's refusals of a code for where it would go (limits/sms-destinations.ts, limits/authcode.ts). */
const PUMPING_REFUSAL = /^Invalid phone: codes are not sent to |^Too many codes for the numbers \+/;

const plural = (n: number, one: string, many = `${one}s`) => `${formatCount(n)} ${n === 1 ? one : many}`;

/**
 * "Is everything fine?" for the period shown: calls that failed inside the server, an error rate
 * up on the period before, deliveries dead or still waiting, providers refusing every message or
 * whose circuit is open.
 */
export function verdictOf({
  data,
  previous,
  providers,
  periodLabel,
  errors = [],
  describeRefusal = (r) => refusalWords(r, (iso) => formatClock(iso, Date.now())),
}: {
  /** A refusing provider's words, since when, how often (the page's: in the reader's zone). */
  describeRefusal?: (refusal: Refusal) => string;
  data: ChartData;
  /** The period's most frequent errors (Stats.errors): where a pumping pattern shows. */
  errors?: Stats['errors'];
  /** The period before, as long: its error rate, when known. */
  previous: ChartData | undefined;
  providers: readonly { readonly role: string; readonly info: ProviderInfo }[];
  periodLabel: string;
}): Verdict {
  const range = { from: data.from, to: data.to };
  const { totals } = data;
  const concerns: Concern[] = [];
  for (const { role, info } of providers) {
    // Refusing says more than its circuit: why, and what to do.
    if (info.refusing) {
      concerns.push({
        text: `The ${role} provider (${info.id}) is refusing: ${describeRefusal(info.refusing)}. ${REFUSAL_REMEDY}`,
        href: '/service',
        link: 'See the providers',
      });
      continue;
    }
    if (info.circuit.state === 'closed') continue;
    concerns.push({
      text:
        info.circuit.state === 'open'
          ? `The ${role} provider (${info.id}) is failing: nothing is sent to it for now.`
          : `The ${role} provider (${info.id}) failed and is being tried again.`,
      href: '/service',
      link: 'See the providers',
    });
  }
  // SMS pumping: codes refused for premium-rate, foreign or consecutive numbers, in numbers.
  const pumping = errors
    .filter((e) => e.operation === 'AuthCode' && e.error !== null && PUMPING_REFUSAL.test(e.error))
    .reduce((n, e) => n + e.count, 0);
  if (pumping >= PUMPING_MIN) {
    concerns.push({
      text: `${plural(pumping, 'login code')} refused for premium-rate, foreign or consecutive numbers: someone may be feeding AuthCode numbers to make the school pay for SMS ("SMS pumping").`,
      href: historyHref(range, { operation: 'AuthCode', outcome: 'client-error' }),
      link: 'List the refused codes',
    });
  }
  if (totals.serverErrors > 0) {
    concerns.push({
      text: `${plural(totals.serverErrors, 'call')} failed inside the server.`,
      href: historyHref(range, { outcome: 'server-error' }),
      link: 'List them',
    });
  }
  const rate = totals.errorRate;
  const before = previous?.totals.errorRate ?? null;
  const risen = before !== null && rate !== null && rate >= RISE_FLOOR_PERCENT && rate > before * RISE_FACTOR;
  // Nothing to compare with (a new service, a quiet period before): a high rate on enough calls.
  const high = before === null && rate !== null && rate >= HIGH_PERCENT && totals.calls >= HIGH_MIN_CALLS;
  if (high && rate !== null) {
    concerns.push({
      text: `${formatPercent(rate)} of calls were refused or failed.`,
      href: historyHref(range, { outcome: 'client-error' }),
      link: 'List the refused calls',
    });
  }
  if (risen && rate !== null) {
    concerns.push({
      text: `Errors are up: ${formatPercent(rate)} of calls, against ${formatPercent(before ?? 0)} the period before.`,
      href: historyHref(range, { outcome: 'client-error' }),
      link: 'List the refused calls',
    });
  }
  if (totals.deliveries.dead > 0) {
    const dead = `${plural(totals.deliveries.dead, 'delivery', 'deliveries')} could not be sent (dead)`;
    // Sent again to a provider that refuses the account, they die again: not the remedy yet.
    const refusing = providers.find((p) => p.info.refusing);
    concerns.push(
      refusing
        ? {
            text: `${dead}: sending them again will not help while the ${refusing.role} provider (${refusing.info.id}) refuses; fix its account first.`,
            href: deliveriesHref(range, { status: 'dead' }),
            link: 'See them',
          }
        : { text: `${dead}.`, href: deliveriesHref(range, { status: 'dead' }), link: 'Retry them' },
    );
  }
  if (totals.deliveries.waiting > 0) {
    concerns.push({
      text: `${plural(totals.deliveries.waiting, 'delivery', 'deliveries')} still waiting to be sent.`,
      href: deliveriesHref(range, { status: 'pending' }),
      link: 'See them',
    });
  }
  const detail = [
    `${plural(totals.calls, 'call')} in the ${periodLabel}`,
    rate === null
      ? null
      : `${formatPercent(rate)} refused or failed${before === null ? '' : ` (${formatPercent(before)} the period before)`}`,
  ]
    .filter(Boolean)
    .join(', ');
  return {
    ok: concerns.length === 0,
    headline:
      concerns.length === 0
        ? 'All is well.'
        : concerns.length === 1
          ? 'One thing needs attention.'
          : `${concerns.length} things need attention.`,
    detail: `${detail}.`,
    concerns,
  };
}
