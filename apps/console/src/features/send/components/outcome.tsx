import {
  callVerdict,
  type Delivery,
  type OperationResult,
  type Problem,
  type VerdictCall,
} from '@school/contract';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { Timestamp } from '../../../components/ui/timestamp';
import { VerdictBadge } from '../../../components/ui/verdict';
import { paths } from '../../../config/paths';
import { problemOf } from '../../../lib/api-client';
import { type ExplainedVerdict, verdictOfDeliveries, wireAnswer } from '../../../lib/call-verdict';
import { DELIVERY_KIND_LABELS, DELIVERY_STATUS_LABELS } from '../../../lib/format';
import { isRetrying, useQueuedDeliveries } from '../api/get-queued-deliveries';

/**
 * What came of a send, in words, with the call's history entry: its one verdict. A send that
 * queued deliveries follows them until they settle: sent, logged (nothing sent), dead, expired.
 */
export function Outcome({
  operation,
  result,
  error,
  pending,
}: {
  /** The operation sent: what it queues (an SMS, pushes) is named by it until its deliveries say. */
  operation: string;
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
        <QueuedOutcome operation={operation} result={result} />
      ) : (
        <Verdict verdict={callVerdict(answerOf(operation, result), null)} id={result.id}>
          <Said result={result} />
          <p className="wire-answer">Wire answer: {wireAnswer(result)}</p>
        </Verdict>
      );
  } else if (error) {
    const problem = problemOf(error);
    const said = <p>{problem.detail ?? problem.title}</p>;
    // A recorded call has a verdict like any other; a send refused before it was recorded has none.
    content =
      problem.callId !== undefined ? (
        <Verdict verdict={callVerdict(refusalOf(operation, problem), null)} id={problem.callId}>
          {said}
        </Verdict>
      ) : (
        <div className="outcome outcome-error">
          <p className="outcome-title">Not sent.</p>
          {said}
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

/** A send's answer as the verdict reads a call. */
const answerOf = (operation: string, result: OperationResult): VerdictCall => ({
  operation,
  outcome: result.outcome,
  status: result.status,
  error: result.outcome === 'ok' ? null : result.message,
});

const refusalOf = (operation: string, problem: Problem): VerdictCall => ({
  operation,
  outcome: problem.status >= 500 ? 'server-error' : 'client-error',
  status: problem.status,
  error: problem.detail ?? null,
});

/**
 * The send's one verdict, as History and the call's page give it (packages/contract/src/verdict.ts),
 * then what explains it, then the wire's own answer as a detail.
 */
function Verdict({ verdict, id, children }: { verdict: ExplainedVerdict; id: number; children?: ReactNode }) {
  return (
    <div className={`outcome outcome-${verdict.tone}`}>
      <p className="outcome-title">
        <VerdictBadge verdict={verdict} />
      </p>
      {verdict.why ? <p>{verdict.why}.</p> : null}
      {children}
      <CallLink id={id} />
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
 * A send that queued deliveries, followed until they settle: its verdict is where they are (the
 * worst of them decides), never the "queued" the service answered once they have moved on.
 */
function QueuedOutcome({ operation, result }: { operation: string; result: OperationResult }) {
  const deliveries = useQueuedDeliveries(result.id);
  const items = deliveries.data ? [...deliveries.data.items].reverse() : [];
  const call = answerOf(operation, result);
  const verdict =
    items.length > 0
      ? verdictOfDeliveries(call, items)
      : callVerdict(call, { state: 'waiting', count: result.queued });
  return (
    <Verdict verdict={verdict} id={result.id}>
      {deliveries.isError && !deliveries.data ? (
        <p>Could not follow the delivery: {problemOf(deliveries.error).title}. See the call in History.</p>
      ) : items.length === 0 ? (
        // What was queued for whom, in the service's words, until the deliveries themselves say.
        <>
          <Said result={result} />
          <p className="muted">Following the delivery…</p>
        </>
      ) : (
        <ul className="queued-deliveries" aria-label="Deliveries of this send">
          {items.map((d) => (
            <QueuedDelivery key={d.id} delivery={d} />
          ))}
        </ul>
      )}
      <p className="wire-answer">Wire answer: {wireAnswer(result)}</p>
    </Verdict>
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
