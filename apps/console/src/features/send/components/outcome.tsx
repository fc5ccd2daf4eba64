import type { OperationResult } from '@school/contract';
import { Link } from 'react-router';
import { paths } from '../../../config/paths';
import { problemOf } from '../../../lib/api-client';

/** What came of a send, in words, with the call's history entry. */
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
    content = (
      <div className={`outcome outcome-${result.outcome === 'ok' ? 'ok' : 'error'}`}>
        <p className="outcome-title">{result.outcome === 'ok' ? 'Sent.' : 'Not sent.'}</p>
        <p>
          {result.message} <span className="muted">(HTTP {result.status})</span>
        </p>
        <p>
          <Link to={paths.call.href(result.id)}>View call #{result.id} in History</Link>
        </p>
      </div>
    );
  } else if (error) {
    const problem = problemOf(error);
    content = (
      <div className="outcome outcome-error">
        <p className="outcome-title">
          Not sent: {problem.title}
          {problem.status ? ` (${problem.status})` : ''}
        </p>
        {problem.detail ? <p>{problem.detail}</p> : null}
        {problem.callId !== undefined ? (
          <p>
            <Link to={paths.call.href(problem.callId)}>View call #{problem.callId} in History</Link>
          </p>
        ) : null}
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
