import { UNKNOWN_OPERATION } from '@school/contract';
import type { ExpressionBuilder, SelectQueryBuilder } from 'kysely';
import type { Binding, Database, Outcome } from './schema.js';

/** Filters over calls; times in epoch milliseconds, `to` exclusive. */
export interface CallQuery {
  /** An operation's name, or UNKNOWN_OPERATION for calls whose operation was not recognised. */
  readonly operation?: string | undefined;
  readonly binding?: Binding | undefined;
  readonly outcome?: Outcome | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  readonly ip?: string | undefined;
  /** Free text: a case-insensitive substring of the parameters, the raw request or response. */
  readonly q?: string | undefined;
}

/** A position in the newest-first order: the last row of the previous page. */
export interface CallCursor {
  readonly at: number;
  readonly id: number;
}

/** The indexed filters of a query (free text is matched by the search, never here). */
export function applyFilters<O>(
  qb: SelectQueryBuilder<Database, 'calls', O>,
  query: Omit<CallQuery, 'q'>,
): SelectQueryBuilder<Database, 'calls', O> {
  let out = qb;
  if (query.operation === UNKNOWN_OPERATION) out = out.where('operation', 'is', null);
  else if (query.operation !== undefined) out = out.where('operation', '=', query.operation);
  if (query.binding !== undefined) out = out.where('binding', '=', query.binding);
  if (query.outcome !== undefined) out = out.where('outcome', '=', query.outcome);
  if (query.from !== undefined) out = out.where('at', '>=', query.from);
  if (query.to !== undefined) out = out.where('at', '<', query.to);
  if (query.ip !== undefined) out = out.where('caller_ip', '=', query.ip);
  return out;
}

/**
 * Calls older than a cursor in the newest-first order. A row-value comparison, so that SQLite and
 * PostgreSQL seek the (…, at, id) index to the cursor instead of re-reading every newer row.
 */
export const olderThan = (cursor: CallCursor) => (eb: ExpressionBuilder<Database, 'calls'>) =>
  eb(eb.refTuple('at', 'id'), '<', eb.tuple(cursor.at, cursor.id));
