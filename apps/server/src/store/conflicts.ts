/**
 * Which unique constraint a write broke, whichever the database, from the driver's own fields
 * rather than its wording. PostgreSQL names the constraint; SQLite names only the table and
 * columns, so each constraint is listed here once, under PostgreSQL's name (the one its
 * migrations got, migrations.ts), with the columns as SQLite reports them. A migration that adds
 * one adds its line here (test/conflicts.test.ts holds this list to both databases' catalogues).
 */
export const UNIQUE_CONSTRAINTS = {
  audit_pkey: 'audit.id',
  book_chunks_pk: 'book_chunks.sha256, book_chunks.seq',
  books_pkey: 'books.id',
  books_term_class: 'books.term_id, books.class_id',
  call_answers_pkey: 'call_answers.id',
  call_answers_response_key: 'call_answers.response',
  call_rollup_state_pkey: 'call_rollup_state.id',
  calls_pkey: 'calls.id',
  deliveries_idempotency_key_key: 'deliveries.idempotency_key',
  deliveries_pkey: 'deliveries.id',
  delivery_attempts_pkey: 'delivery_attempts.id',
  delivery_rollup_state_pkey: 'delivery_rollup_state.id',
  instances_pkey: 'instances.id',
  limit_slots_pkey: 'limit_slots.id',
  schools_base_url_key: 'schools.base_url',
  schools_pkey: 'schools.id',
  schools_topic_key_key: 'schools.topic_key',
  sessions_pkey: 'sessions.id',
  templates_by_type_key: 'templates.type_key',
  templates_pkey: 'templates.id',
  templates_type_key: 'templates.type',
  users_pkey: 'users.id',
  users_sso_subject: 'users.sso_subject',
  users_username_key: 'users.username',
} as const satisfies Record<string, string>;

/** A unique constraint of the schema, by its PostgreSQL name. */
export type UniqueConstraint = keyof typeof UNIQUE_CONSTRAINTS;

const byColumns = new Map<string, UniqueConstraint>(
  Object.entries(UNIQUE_CONSTRAINTS).map(([name, columns]) => [columns, name as UniqueConstraint]),
);

/** PostgreSQL's SQLSTATE for unique_violation. */
const PG_UNIQUE_VIOLATION = '23505';
/** better-sqlite3's codes for a UNIQUE index and a PRIMARY KEY broken. */
const SQLITE_UNIQUE_CODES = new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
/** What SQLite's message names: `UNIQUE constraint failed: books.term_id, books.class_id`. */
const SQLITE_COLUMNS = /^UNIQUE constraint failed: (.+)$/;

/**
 * The unique constraint `err` says a write broke: its name, `unknown` when the database names one
 * this module does not list, undefined when `err` is not a unique violation at all.
 */
export function uniqueViolation(err: unknown): UniqueConstraint | 'unknown' | undefined {
  if (!(err instanceof Error)) return undefined;
  const { code, constraint } = err as { code?: unknown; constraint?: unknown };
  if (code === PG_UNIQUE_VIOLATION) {
    return typeof constraint === 'string' && Object.hasOwn(UNIQUE_CONSTRAINTS, constraint)
      ? (constraint as UniqueConstraint)
      : 'unknown';
  }
  if (typeof code === 'string' && SQLITE_UNIQUE_CODES.has(code)) {
    const columns = SQLITE_COLUMNS.exec(err.message)?.[1];
    return (columns === undefined ? undefined : byColumns.get(columns)) ?? 'unknown';
  }
  return undefined;
}
