import type { ReactNode } from 'react';
import { problemOf } from '../../lib/api-client';

/** A loading message that screen readers announce. */
export function Loading({ children = 'Loading…' }: { children?: ReactNode }) {
  return (
    <p className="status status-loading" role="status">
      {children}
    </p>
  );
}

/** An error, with the problem's title and detail, and a way to try again. */
export function ErrorState({
  error,
  title,
  onRetry,
}: {
  error: unknown;
  /** What failed, e.g. "Could not load the history". */
  title?: string;
  onRetry?: () => void;
}) {
  const problem = problemOf(error);
  return (
    <div className="status status-error" role="alert">
      <p className="status-title">
        {title ? `${title}: ` : ''}
        {problem.title}
        {problem.status ? ` (${problem.status})` : ''}
      </p>
      {problem.detail ? <p>{problem.detail}</p> : null}
      {onRetry ? (
        <button type="button" className="button" onClick={onRetry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

export function EmptyState({ children }: { children: ReactNode }) {
  return <p className="status status-empty">{children}</p>;
}

/**
 * A failed action's problem in one short alert, e.g. beside the button that failed: "Not retried:
 * Delivery 12 is pending; only dead deliveries can be retried. (409)".
 */
export function ProblemMessage({ error, prefix }: { error: unknown; prefix: string }) {
  const problem = problemOf(error);
  return (
    <p className="problem-message" role="alert">
      {prefix}: {problem.detail ?? problem.title}
      {problem.status ? <span className="muted"> (HTTP {problem.status})</span> : null}
    </p>
  );
}
