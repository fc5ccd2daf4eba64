import type { DeliveryList, ProviderInfo } from '@school/contract';
import type { ProgressTone } from './retry-progress';

type Counts = DeliveryList['counts'];

/**
 * Where the deliveries a "Retry all dead" put back are, from the counts before it and now: as many
 * dead as there were, less those retried, are dead again; sent (or logged) and expired since are
 * theirs; the rest are on their way. Counts are of every delivery, so a new message sent or dying
 * meanwhile is counted as one of them: each figure is bounded by how many were retried.
 */
export function retryDeadProgress(before: Counts, retried: number, now: Counts) {
  const clamp = (n: number, max: number) => Math.max(0, Math.min(n, max));
  const dead = clamp(now.dead - (before.dead - retried), retried);
  const sent = clamp(now.sent + now.logged - before.sent - before.logged, retried - dead);
  const expired = clamp(now.expired - before.expired, retried - dead - sent);
  return { dead, sent, expired, onTheirWay: retried - dead - sent - expired };
}

export type RetryDeadProgress = ReturnType<typeof retryDeadProgress>;

/**
 * The message: "2 retried: waiting to be sent…", then "2 retried: 0 sent, 2 refused again
 * (account suspended, HTTP 403)." once none is on its way. `refusing`: a provider that refuses
 * every message now, whose words say why they failed.
 */
export function retryDeadMessage(
  retried: number,
  p: RetryDeadProgress,
  refusing: ProviderInfo['refusing'] | undefined,
): { text: string; tone: ProgressTone } {
  const head = `${retried} retried`;
  if (p.onTheirWay === retried) return { text: `${head}: waiting to be sent…`, tone: 'pending' };
  const because = refusing
    ? ` (${refusing.reason}${refusing.status === null ? '' : `, HTTP ${refusing.status}`})`
    : '';
  const parts = [
    `${p.sent} sent`,
    ...(p.dead > 0 ? [`${p.dead} ${refusing ? 'refused' : 'failed'} again${because}`] : []),
    ...(p.expired > 0 ? [`${p.expired} too late`] : []),
    ...(p.onTheirWay > 0 ? [`${p.onTheirWay} on their way…`] : []),
  ];
  const text = `${head}: ${parts.join(', ')}${p.onTheirWay > 0 ? '' : '.'}`;
  if (p.onTheirWay > 0) return { text, tone: 'pending' };
  return { text, tone: p.dead + p.expired > 0 ? 'error' : 'ok' };
}
