import { type RawBuilder, type SqlBool, sql } from 'kysely';

/**
 * Whose data a member of staff reads (docs/security.md#who-sees-what): null, organisation-wide,
 * every call, delivery and figure; or the ids of the schools they are limited to, and then only
 * what belongs to one of those. A call belongs to the school decided when it was recorded
 * (`calls.school_id`), its deliveries to their call's (`deliveries.school_id`); what belongs to no
 * school is seen organisation-wide only. The reads of History, the outbox and the statistics take
 * one, given by the route from the session (`request.staff.schoolIds`); an empty list sees nothing.
 */
export type SchoolScope = readonly number[] | null;

/** Whether something of school `schoolId` (null: of none) is seen under `scope` (undefined: organisation-wide). */
export function inScope(scope: SchoolScope | undefined, schoolId: number | null): boolean {
  if (scope === null || scope === undefined) return true;
  return schoolId !== null && scope.includes(schoolId);
}

/**
 * The SQL condition of a limited scope over a table's `school_id` column, or undefined when
 * organisation-wide: one school an equality (which seeks a `(school_id, …)` index), several an
 * `IN`, none a condition nothing passes. `seek: false` tests the rows another index finds
 * (`school_id + 0`, which no index serves): where that index finds few, SQLite, which keeps no
 * statistics, would as soon read every row of the school's.
 */
export function schoolCondition(
  scope: SchoolScope | undefined,
  { seek = true }: { readonly seek?: boolean } = {},
): RawBuilder<SqlBool> | undefined {
  if (scope === null || scope === undefined) return undefined;
  if (scope.length === 0) return sql<SqlBool>`1 = 0`;
  const column = seek ? sql.ref('school_id') : sql`school_id + 0`;
  if (scope.length === 1) return sql<SqlBool>`${column} = ${scope[0]}`;
  return sql<SqlBool>`${column} IN (${sql.join(scope)})`;
}
