import { type SelectQueryBuilder, sql } from 'kysely';
import { CALL_COLUMNS, type CallRow, type Database } from './schema.js';
import type { UnitOfWork } from './unit-of-work.js';

/**
 * Answers recorded by reference (migration 0026). An answer that is the same text for every call
 * of its kind (a success's: recording/canonical-answers.ts) is kept once, in `call_answers`, and a
 * call answered with it holds its id in `response_ref` and an empty `response`. The text a call
 * shows is resolved in the query that reads it, by the SQL below, so that every reader (a call's
 * page, exports, free text, the privacy report, the live tail of other instances) gets the text
 * it was answered with, and a call recorded before, or with an answer of its own, reads as it
 * always did. The rows are never changed or deleted: a call refers to the bytes it was answered
 * with, whatever the server's settings (SERVICE_NAMESPACE) since.
 */

/** A call's response as recorded, in SQL over the calls table (or its alias) `table`. */
export const callResponseSql = (table = 'calls'): string =>
  `CASE WHEN ${table}.response_ref IS NULL THEN ${table}.response ` +
  `ELSE (SELECT a.response FROM call_answers a WHERE a.id = ${table}.response_ref) END`;

type RowColumn = Exclude<(typeof CALL_COLUMNS)[number], 'response' | 'response_ref'>;

/** The columns of a call as History reads it but its response (resolved by callResponseSql). */
const ROW_COLUMNS: readonly ('id' | RowColumn)[] = [
  'id',
  ...CALL_COLUMNS.filter((c): c is RowColumn => c !== 'response' && c !== 'response_ref'),
];

/** A call's every column as SQL text over `calls`, its response resolved (SQLite's search worker). */
export const CALL_ROW_SQL = [...ROW_COLUMNS, `${callResponseSql()} AS response`].join(', ');

/** Selects a call's every column, its response resolved: a CallRow, whichever way it was recorded. */
export function selectCallRow<O>(
  qb: SelectQueryBuilder<Database, 'calls', O>,
): SelectQueryBuilder<Database, 'calls', O & CallRow> {
  return qb.select([...ROW_COLUMNS, sql<string>`${sql.raw(callResponseSql())}`.as('response')]) as never;
}

/**
 * Free text's test of a call's response, as SQL text over the calls table (or its alias) `table`,
 * given `like`, the test of one text expression: the call's own text passes, or the canonical
 * answer it refers to does. Those answers are found once per statement (an uncorrelated subquery
 * over a table of a few rows), not looked up per call. PostgreSQL's search writes the same in
 * Kysely (history/pg-search.ts), its pattern a parameter.
 */
export const responseMatchSql = (table: string, like: (expression: string) => string): string =>
  `(${like(`${table}.response`)} OR ${table}.response_ref IN (SELECT id FROM call_answers WHERE ${like('response')}))`;

/**
 * The id of a canonical answer's text, added the first time it is used (by any instance: the text
 * is unique). Bookkeeping (`relaxed`): a call that refers to it commits after it, durably, and so
 * makes it durable too.
 */
export function registerCallAnswer(work: UnitOfWork, text: string): Promise<number> {
  return work.relaxed(async (trx) => {
    await trx
      .insertInto('call_answers')
      .values({ response: text })
      .onConflict((oc) => oc.column('response').doNothing())
      .execute();
    const row = await trx
      .selectFrom('call_answers')
      .select('id')
      .where('response', '=', text)
      .executeTakeFirstOrThrow();
    return Number(row.id);
  });
}
