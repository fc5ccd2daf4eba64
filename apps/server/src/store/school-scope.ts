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

/** A limited scope as a list (undefined when organisation-wide): for the SQL forms' `IN`. */
export const scopedSchools = (scope: SchoolScope | undefined): readonly number[] | undefined =>
  scope === null || scope === undefined ? undefined : scope;
