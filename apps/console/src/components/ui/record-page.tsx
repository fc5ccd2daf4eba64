import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link, useLocation, useParams } from 'react-router';
import { ProblemError } from '../../lib/api-client';
import { recordId } from '../../lib/record-id';
import { returnState } from '../../lib/return-focus';
import { ErrorState, Loading } from './status';

/**
 * The page of one record named by the route's `:id` (a call, a delivery): the link back to its list
 * with the filters it was opened from (kept in the location state), and the record once the id is
 * a positive integer.
 */
export function RecordPage({
  title,
  back,
  children,
}: {
  /** What the record is, capitalised: "Call", "Delivery". */
  title: string;
  back: { label: string; href: (search: string) => string };
  children: (id: number) => ReactNode;
}) {
  const params = useParams();
  const location = useLocation();
  const id = recordId(params.id);
  const search = (location.state as { search?: string } | null)?.search ?? '';
  const noun = title.toLowerCase();

  return (
    <div className={`page ${noun}-page`}>
      <title>{`${title} ${params.id ?? ''} · School Messaging`}</title>
      <p>
        {/* Back on the list, the focus returns to this record's row. */}
        <Link to={back.href(search)} state={id === undefined ? undefined : returnState(id)}>
          ← Back to {back.label}
        </Link>
      </p>
      <h1>
        {title} #{params.id}
      </h1>
      {id !== undefined ? (
        children(id)
      ) : (
        <p role="alert">
          “{params.id}” is not a {noun} number.
        </p>
      )}
    </div>
  );
}

/**
 * One record's query: loading, then the record; or why not, with Try again unless the record does
 * not exist (404).
 */
export function RecordQuery<T>({
  query,
  noun,
  id,
  children,
}: {
  query: UseQueryResult<T>;
  /** "call", "delivery". */
  noun: string;
  id: number;
  children: (record: T) => ReactNode;
}) {
  if (query.isPending) {
    return (
      <Loading>
        Loading {noun} #{id}…
      </Loading>
    );
  }
  if (query.isError) {
    const notFound = query.error instanceof ProblemError && query.error.status === 404;
    return (
      <ErrorState
        error={query.error}
        title={notFound ? `No ${noun} #${id}` : `Could not load ${noun} #${id}`}
        onRetry={notFound ? undefined : () => query.refetch()}
      />
    );
  }
  return children(query.data);
}
