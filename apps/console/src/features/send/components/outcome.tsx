import type { Delivery, OperationResult } from '@school/contract';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { Timestamp } from '../../../components/ui/timestamp';
import { paths } from '../../../config/paths';
import { problemOf } from '../../../lib/api-client';
import { DELIVERY_KIND_LABELS, DELIVERY_STATUS_LABELS } from '../../../lib/format';
import { isRetrying, isSettled, useQueuedDeliveries } from '../api/get-queued-deliveries';

/**
 * What came of a send, in words, with the call's history entry. A send that queued deliveries
 * says what it queued for whom and follows them until they settle: sent, logged (nothing sent), dead, expired.
 */
export function Outcome({
  result,
  error,
  pending,
}: {
  result: OperationResult | undefined;
  error: unknown;
  pending: boolean;
}) {
  let content = null;
  if (pending) {
    content = <p>Sending…</p>;
  } else if (result) {
    content =
      result.outcome === 'ok' && result.queued > 0 ? (
        <QueuedOutcome result={result} />
      ) : (
        <div className={`outcome outcome-${result.outcome === 'ok' ? 'ok' : 'error'}`}>
          <p className="outcome-title">{result.outcome === 'ok' ? 'Done.' : 'Not sent.'}</p>
          <Said result={result} />
          <CallLink id={result.id} />
        </div>
      );
  } else if (error) {
    const problem = problemOf(error);
    content = (
      <div className="outcome outcome-error">
        <p className="outcome-title">Not sent.</p>
        <p>{problem.detail ?? problem.title}</p>
        {problem.callId !== undefined ? <CallLink id={problem.callId} /> : null}
      </div>
    );
  }
  // One live region that stays mounted, so the outcome is announced when it changes.
  return (
    <div className="outcome-region" aria-live="polite" aria-atomic="true">
      {content}
    </div>
  );
}

/** What the service said it did (or why not), in its words: no status codes. */
function Said({ result }: { result: OperationResult }) {
  return <p>{result.message}</p>;
}

function CallLink({ id }: { id: number }) {
  return (
    <p>
      <Link to={paths.call.href(id)}>View call #{id} in History</Link>
    </p>
  );
}

/**
 * The title and look of a send by where its deliveries are: the worst of them decides. Until they
 * settle, what was queued for whom ("SMS queued to +44…").
 */
function settledAs(items: readonly Delivery[], queued: string): { title: string; tone: string } {
  if (items.length === 0 || !items.every(isSettled)) return { title: queued, tone: 'pending' };
  if (items.some((d) => d.status === 'dead' || d.status === 'expired')) {
    return { title: 'Not delivered.', tone: 'error' };
  }
  if (items.some((d) => d.status === 'logged')) return { title: 'Logged, not sent.', tone: 'warn' };
  return { title: 'Sent.', tone: 'ok' };
}

function QueuedOutcome({ result }: { result: OperationResult }) {
  const deliveries = useQueuedDeliveries(result.id);
  const items = deliveries.data ? [...deliveries.data.items].reverse() : [];
  const { title, tone } = settledAs(items, result.message);
  return (
    <div className={`outcome outcome-${tone}`}>
      <p className="outcome-title">{title}</p>
      {title === result.message ? null : <Said result={result} />}
      {deliveries.isError && !deliveries.data ? (
        <p>Could not follow the delivery: {problemOf(deliveries.error).title}. See the call in History.</p>
      ) : items.length === 0 ? (
        <p className="muted">Following the delivery…</p>
      ) : (
        <ul className="queued-deliveries" aria-label="Deliveries of this send">
          {items.map((d) => (
            <QueuedDelivery key={d.id} delivery={d} />
          ))}
        </ul>
      )}
      <CallLink id={result.id} />
    </div>
  );
}

const time = (iso: string, due = false) => <Timestamp iso={iso} due={due} />;

/** `: error.` after what failed, or `.` when there is no error text. */
const because = (error: string | null) => (error ? `: ${error}${/[.!?]$/.test(error) ? '' : '.'}` : '.');

/** Where one delivery is, in words, with a link to its attempts. */
function QueuedDelivery({ delivery: d }: { delivery: Delivery }) {
  const retrying = isRetrying(d);
  const attempts = d.attempts === 1 ? 'one attempt' : `${d.attempts} attempts`;
  let said: ReactNode;
  if (retrying) {
    said = (
      <>
        Attempt {d.attempts} failed{because(d.lastError)}{' '}
        {d.nextAttemptAt ? <>Next attempt {time(d.nextAttemptAt, true)}.</> : null}
      </>
    );
  } else if (d.status === 'pending') said = 'Waiting for its first attempt.';
  else if (d.status === 'sending') said = 'Being sent now.';
  else if (d.status === 'sent')
    said = <>The provider accepted it{d.sentAt ? <> {time(d.sentAt)}</> : null}.</>;
  else if (d.status === 'logged')
    said = `Nothing was sent: the ${d.provider} provider wrote it to the server's log.`;
  else if (d.status === 'dead')
    said = `Given up after ${attempts}${because(d.lastError)} It can be retried from its page.`;
  else said = 'Not sent within its validity: an auth code is never sent late.';
  return (
    <li>
      <Link to={paths.delivery.href(d.id)}>
        Delivery #{d.id}: {DELIVERY_KIND_LABELS[d.kind]} to {d.recipient}
      </Link>{' '}
      <span className={`badge badge-delivery-${d.status}`}>
        {retrying ? 'Retrying' : DELIVERY_STATUS_LABELS[d.status]}
      </span>{' '}
      <span className="queued-delivery-said">{said}</span>
    </li>
  );
}
