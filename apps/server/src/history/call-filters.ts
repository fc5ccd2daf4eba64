import { UNKNOWN_OPERATION } from '@school/contract';
import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { CALL_HAS_FAILED_DELIVERY_SQL, callHasFailedDelivery } from '../outbox/index.js';
import {
  type Binding,
  type CallRow,
  type Database,
  inScope,
  type Outcome,
  type SchoolScope,
} from '../store/index.js';

/**
 * History's call filter, defined once. CALL_FILTERS describes each filter; the functions below
 * compile that description to the forms the filter runs in:
 *   - `applyFilters`: a Kysely query (lists, exports, the PostgreSQL search's chunks);
 *   - `sqliteFilter`: SQL text with named parameters, for the SQLite search worker, which runs
 *     untyped JavaScript in a thread of its own (search-worker.mjs) and cannot import this module;
 *   - `matchesCall`: a just-recorded row in memory, for the live tail.
 * The delivery filter is not a column of calls but a condition the outbox gives, in each form
 * (outbox/call-conditions.ts). The school scope (`scope`: whose calls the reader sees,
 * store/school-scope.ts) is a membership of the calls' `school_id` in each form alike: every read
 * of History goes through one of them, so the scope the route puts in the query holds in all.
 * Free text (`q`) is searched in TEXT_COLUMNS, with `likePattern` in SQL and `containsText` in
 * memory. Adding a filter is a field of CallQuery and an entry of CALL_FILTERS (the compiler
 * refuses one without the other); test/filter-agreement.test.ts checks that the forms agree.
 */

/** Filters over calls; times in epoch milliseconds, `to` exclusive. */
export interface CallQuery {
  /** An operation's name, or UNKNOWN_OPERATION for calls whose operation was not recognised. */
  readonly operation?: string | undefined;
  readonly binding?: Binding | undefined;
  readonly outcome?: Outcome | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  readonly ip?: string | undefined;
  /** A phone in E.164: calls with that `phone` parameter (AuthCode's). */
  readonly phone?: string | undefined;
  /** `failed`: calls with a delivery (SMS or push) that went dead or expired. */
  readonly delivery?: 'failed' | undefined;
  /**
   * Free text: a case-insensitive substring of the parameters, the raw request or response, the
   * error text or the note.
   */
  readonly q?: string | undefined;
  /**
   * Whose calls: the schools of a member of staff limited to some (the calls of one of them),
   * or null or undefined for organisation-wide staff (every call). Set by the route from the
   * session, never from the query string.
   */
  readonly scope?: SchoolScope | undefined;
}

/** A position in the newest-first order: the last row of the previous page. */
export interface CallCursor {
  readonly at: number;
  readonly id: number;
}

type IndexedKey = Exclude<keyof CallQuery, 'q' | 'delivery' | 'scope'>;

interface CallFilter {
  readonly key: IndexedKey;
  /** The column of the calls table it tests. */
  readonly column: keyof CallRow & keyof Database['calls'];
  /** How the column compares with the value: equal, at least, or below. */
  readonly test: '=' | '>=' | '<';
  /** The stored value a filter value stands for, when they differ. */
  readonly stored?: (value: unknown) => unknown;
}

export const CALL_FILTERS = [
  // Calls of no recognised operation are stored with a NULL operation.
  {
    key: 'operation',
    column: 'operation',
    test: '=',
    stored: (value) => (value === UNKNOWN_OPERATION ? null : value),
  },
  { key: 'binding', column: 'binding', test: '=' },
  { key: 'outcome', column: 'outcome', test: '=' },
  { key: 'from', column: 'at', test: '>=' },
  { key: 'to', column: 'at', test: '<' },
  { key: 'ip', column: 'caller_ip', test: '=' },
  { key: 'phone', column: 'phone', test: '=' },
] as const satisfies readonly CallFilter[];

// Every field of CallQuery but `q` has its filter: a field added without one fails to compile.
type Unfiltered = Exclude<IndexedKey, (typeof CALL_FILTERS)[number]['key']>;
const everyFieldHasAFilter: [Unfiltered] extends [never] ? true : Unfiltered = true;
void everyFieldHasAFilter;

/*
 * The delivery filter: calls with a delivery that failed (the outbox's callHasFailedDelivery and
 * CALL_HAS_FAILED_DELIVERY_SQL). A call is recorded before any of its deliveries can fail, so in
 * memory (the live tail) a call just recorded never passes it: a failure shows on the list's next
 * read, not as calls arrive.
 */

/**
 * The columns free text is searched in: every text of a call that can name a parent's number or a
 * school, as the privacy report looks for it (history/erasure.ts). The error and the note are short
 * and on the row the scan reads anyway, so each costs next to nothing beside the raw messages
 * (docs/performance.md#what-was-tried).
 */
export const TEXT_COLUMNS = [
  'params',
  'request',
  'response',
  'error',
  'note',
] as const satisfies readonly (keyof CallRow)[];

/** The filters a query sets, each with the value as stored (null: the column is NULL). */
function present(query: CallQuery): { filter: CallFilter; value: unknown }[] {
  const out: { filter: CallFilter; value: unknown }[] = [];
  for (const filter of CALL_FILTERS as readonly CallFilter[]) {
    const value = query[filter.key];
    if (value !== undefined) out.push({ filter, value: filter.stored ? filter.stored(value) : value });
  }
  return out;
}

/** The indexed filters of a query (free text is matched by the search, never here). */
export function applyFilters<O>(
  qb: SelectQueryBuilder<Database, 'calls', O>,
  query: Omit<CallQuery, 'q'>,
): SelectQueryBuilder<Database, 'calls', O> {
  let out = qb;
  for (const { filter, value } of present(query)) {
    out =
      value === null
        ? out.where(filter.column, 'is', null)
        : out.where(filter.column, filter.test, value as string | number);
  }
  if (query.delivery === 'failed') {
    const { from, to } = query;
    out = out.where((eb) => callHasFailedDelivery(eb, { from, to }));
  }
  const schools = query.scope;
  if (schools) {
    if (schools.length === 0) out = out.where(sql<boolean>`1 = 0`);
    else if (byOwnIndex(query)) {
      // The school tested on the few calls the caller's or the phone's index finds.
      out = out.where(sql<boolean>`school_id + 0 IN (${sql.join(schools)})`);
    } else {
      // calls_school_at carries the operation, outcome and binding: their filters are tested in it.
      // One school (the usual scope): an equality, which seeks calls_school_at (migration 0025).
      out =
        schools.length === 1
          ? out.where('school_id', '=', schools[0] as number)
          : out.where('school_id', 'in', schools);
    }
  }
  return out;
}

/**
 * Whether a query is read through its caller's or its phone's index, whatever the school scope:
 * a caller's or a parent's calls are few, so the school is then tested on them (`school_id + 0`,
 * which no index serves). Without statistics SQLite would as soon take the school's index
 * (school_id, at, id) and read every call of the school for the few of that caller
 * (docs/performance.md#staff-scoped-to-schools).
 */
const byOwnIndex = (query: Omit<CallQuery, 'q'>): boolean =>
  query.ip !== undefined || query.phone !== undefined;

/** The indexed filters as SQL text over `calls` with named parameters (better-sqlite3's `@name`). */
export interface SqliteFilter {
  /** Conditions to AND together; the same list for the same filters set, whatever their values. */
  readonly where: string[];
  readonly params: Record<string, string | number>;
}

export function sqliteFilter(query: Omit<CallQuery, 'q'>): SqliteFilter {
  const where: string[] = [];
  const params: Record<string, string | number> = {};
  for (const { filter, value } of present(query)) {
    if (value === null) {
      where.push(`${filter.column} IS NULL`);
    } else {
      where.push(`${filter.column} ${filter.test} @${filter.key}`);
      params[filter.key] = value as string | number;
    }
  }
  if (query.delivery === 'failed') where.push(CALL_HAS_FAILED_DELIVERY_SQL);
  const schools = query.scope;
  if (schools) {
    const names = schools.map((_, i) => `school${i}`);
    schools.forEach((id, i) => {
      params[names[i] as string] = id;
    });
    const column = byOwnIndex(query) ? 'school_id + 0' : 'school_id';
    where.push(names.length === 0 ? '1 = 0' : `${column} IN (${names.map((n) => `@${n}`).join(', ')})`);
  }
  return { where, params };
}

/** Whether a just-recorded call passes the filters, with the same meaning as the SQL forms. */
export function matchesCall(query: CallQuery, row: CallRow): boolean {
  if (query.delivery !== undefined) return false;
  if (!inScope(query.scope, row.school_id)) return false;
  for (const { filter, value } of present(query)) {
    const stored = row[filter.column];
    if (value === null || filter.test === '=') {
      if (stored !== value) return false;
    } else if (stored === null || !compare(filter.test, stored, value)) {
      return false;
    }
  }
  return !query.q || containsText(row, query.q);
}

const compare = (test: '>=' | '<', stored: unknown, value: unknown): boolean =>
  test === '>=' ? (stored as number) >= (value as number) : (stored as number) < (value as number);

/**
 * Free text as a LIKE pattern: `%`, `_` and `\` taken literally (ESCAPE '\'), ASCII letters in
 * lower case. SQLite's LIKE folds ASCII letters itself; PostgreSQL's search folds the columns
 * (pg-search.ts), so History finds the same calls on both databases.
 */
export const likePattern = (text: string): string =>
  `%${foldAscii(text).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The in-memory form of the LIKE: a case-insensitive substring of a text column, ASCII folded. */
function containsText(row: CallRow, q: string): boolean {
  const folded = foldAscii(q);
  return TEXT_COLUMNS.some((column) => foldAscii(row[column] ?? '').includes(folded));
}

/**
 * Lower-cases ASCII letters only, as SQLite's LIKE compares them: the live tail must pass exactly
 * the calls a reload of History lists (`Élève` and `élève` are different there, as in SQL).
 */
const foldAscii = (text: string): string => text.replace(/[A-Z]+/g, (s) => s.toLowerCase());

/**
 * Calls older than a cursor in the newest-first order. A row-value comparison, so that SQLite and
 * PostgreSQL seek the (…, at, id) index to the cursor instead of re-reading every newer row.
 */
export const olderThan = (cursor: CallCursor) => (eb: ExpressionBuilder<Database, 'calls'>) =>
  eb(eb.refTuple('at', 'id'), '<', eb.tuple(cursor.at, cursor.id));
