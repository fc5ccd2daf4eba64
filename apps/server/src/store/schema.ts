import type { AuditAction, Binding, DeliveryStatus, Outcome, Role } from '@school/contract';
import type { Generated, Insertable, Selectable } from 'kysely';

// The columns' value sets are the contract's (one list each, shared with the API and console).
export type { Binding, DeliveryStatus, Outcome };

export interface CallsTable {
  id: Generated<number>;
  /** Epoch milliseconds when the request arrived. */
  at: number;
  /** The endpoint group's service name, e.g. `AuthCodeSending`. */
  group_name: string;
  /** The operation, or null when the request named none we know. */
  operation: string | null;
  /** Where the call came in; `console` is the staff console's JSON API. */
  binding: Binding;
  caller_ip: string;
  user_agent: string | null;
  /** JSON object of the parameters as received (secrets masked); null when none could be read. */
  params: string | null;
  /**
   * The call's `phone` parameter (AuthCode's) in E.164, as the operation normalised it: History's
   * indexed phone filter. Null for other operations, a phone that was not valid, and calls
   * recorded before it was kept (migration 0020; free text finds those).
   */
  phone: string | null;
  outcome: Outcome;
  status: number;
  /** The fault or error text the caller got. */
  error: string | null;
  duration_ms: number;
  /** The request as an HTTP message (selected headers, body), secrets masked, capped. */
  request: string;
  request_bytes: number;
  /**
   * The response as an HTTP message, capped; empty when the call's answer is recorded by
   * reference (`response_ref`): read it through call-answers.ts, never from this column alone.
   */
  response: string;
  response_bytes: number;
  /** What the operation did, in words (e.g. how many pushes pushNoti dispatched). */
  note: string | null;
  /** The id the request was answered and logged under (null for calls recorded before it was kept). */
  request_id: string | null;
  /**
   * The school the call belongs to, decided as it was recorded (operations/call-school.ts): whose
   * staff see it (school-scope.ts). Null when it belongs to none (seen organisation-wide only),
   * and for calls recorded before it was kept (migration 0025).
   */
  school_id: number | null;
  /**
   * The canonical answer the call was answered with (`call_answers`), recorded by reference in
   * place of its text (migration 0026): `response` is then empty. Null: `response` holds the text,
   * as for every call recorded before.
   */
  response_ref: number | null;
}

/**
 * An answer that is the same text for every call of its kind (a success's, in its binding:
 * recording/canonical-answers.ts), kept once and referred to by the calls answered with it. Never
 * changed or deleted: a call refers to the text it was answered with, whatever the server's
 * settings since.
 */
export interface CallAnswersTable {
  id: Generated<number>;
  /** The answer as a call record shows it (an HTTP message, secrets masked). */
  response: string;
}

/** A call as the recorder inserts it. */
export type NewCall = Insertable<CallsTable>;
/**
 * A call as History reads it back: `response` the text it was answered with, its canonical
 * answer's when recorded by reference (call-answers.ts resolves it in the query).
 */
export type CallRow = Omit<Selectable<CallsTable>, 'response_ref'>;
/** A call without its raw request and response: what lists and the live tail carry. */
export type CallSummaryRow = Omit<CallRow, 'request' | 'response'>;

/** The columns a call is inserted with (all but its id). */
export const CALL_COLUMNS = [
  'at',
  'group_name',
  'operation',
  'binding',
  'caller_ip',
  'user_agent',
  'params',
  'phone',
  'outcome',
  'status',
  'error',
  'duration_ms',
  'request',
  'request_bytes',
  'response',
  'response_bytes',
  'note',
  'request_id',
  'school_id',
  'response_ref',
] as const satisfies readonly (keyof NewCall)[];

/** The raw messages, and the reference that may stand for the response's text. */
type RawColumn = 'request' | 'response' | 'response_ref';
type SummaryColumn = Exclude<(typeof CALL_COLUMNS)[number], RawColumn>;
const isSummaryColumn = (c: (typeof CALL_COLUMNS)[number]): c is SummaryColumn =>
  c !== 'request' && c !== 'response' && c !== 'response_ref';
/** Everything but the raw messages, which lists and the live tail do not carry. */
export const CALL_SUMMARY_COLUMNS: readonly ('id' | SummaryColumn)[] = [
  'id',
  ...CALL_COLUMNS.filter(isSummaryColumn),
];

export interface SchoolsTable {
  id: Generated<number>;
  name: string;
  /** Normalised: lower-case scheme and host, no default port, no trailing slash. */
  base_url: string;
  /** Letters, digits, `-`, `_`: the school's push topic is `school-{topic_key}`. */
  topic_key: string;
  /** Comma-separated IPs or CIDR ranges allowed to call for this school; null: any caller. */
  allowed_ips: string | null;
  created_at: number;
  updated_at: number;
}

export interface TemplatesTable {
  id: Generated<number>;
  /** A notification type, `*` for the generic fallback, `marks` for SendMarkNotes. */
  type: string;
  /**
   * What the type is matched by: trimmed, lower case (templateTypeKey), unique. Null only for a
   * template that already differed from an older one by case alone when keys came in (never used).
   */
  type_key: string | null;
  title: string;
  body: string;
  updated_at: number;
}

export interface BooksTable {
  id: Generated<number>;
  term_id: string;
  class_id: string;
  /** Hex SHA-256 of the file: its name under DATA_DIR/books and its ETag. */
  sha256: string;
  size: number;
  /** The name it was uploaded with, for display. */
  filename: string;
  uploaded_at: number;
}

export interface UsersTable {
  id: Generated<number>;
  /** Lower case, unique. */
  username: string;
  display_name: string;
  role: Role;
  /**
   * `scrypt$N$r$p$salt$hash` (base64url), see auth/password.ts; `!` for a user made by single
   * sign-on, who has no password here.
   */
  password_hash: string;
  /** 1: may not log in; their sessions were ended when disabled. */
  disabled: number;
  created_at: number;
  updated_at: number;
  last_login_at: number | null;
  /** The second factor's secret (TOTP, base32), sealed (secrets/sealer.ts); null: none set up. */
  totp_secret: string | null;
  /** A secret being set up, sealed, until a code from it is entered. */
  totp_pending: string | null;
  /** The last time step a code was accepted for: a code is taken once (replay refused). */
  totp_last_step: number | null;
  /** JSON array of the SHA-256 of each unused recovery code. */
  recovery_codes: string | null;
  /** Single sign-on: `{issuer} {subject}` of the school account it is; null for a local user. */
  sso_subject: string | null;
  /**
   * The schools the user is limited to, a JSON array of school ids (users.ts, schoolIdsOf); null:
   * every school (organisation-wide).
   */
  school_ids: string | null;
}

export interface SessionsTable {
  /** Hex SHA-256 of the session token (the cookie holds the token itself). */
  id: string;
  user_id: number;
  created_at: number;
  /** Last use; the session ends SESSION_IDLE_TIMEOUT after it. */
  last_seen_at: number;
  /** Absolute end: login + SESSION_MAX_AGE. */
  expires_at: number;
  ip: string;
  user_agent: string | null;
  /**
   * How it was opened: `password` (with the second factor, where one is set up) or `sso` (the
   * school's identity provider, which asks for its own).
   */
  method: SessionMethod;
}

export type SessionMethod = 'password' | 'sso';

export interface AuditTable {
  id: Generated<number>;
  at: number;
  user_id: number | null;
  username: string | null;
  ip: string;
  action: AuditAction;
  target: string | null;
  /** JSON object: what changed, or facts of the action; never a secret. */
  details: string | null;
}

/** A slot taken under a limit shared by the instances (store/limits.ts): one row per accepted attempt. */
export interface LimitSlotsTable {
  id: Generated<number>;
  /** Which limit, e.g. `authcode-phone`, `login-user`. */
  dimension: string;
  key: string;
  /** Epoch ms the slot was taken. */
  at: number;
}

/** A book's bytes in the database (PostgreSQL), in order; the file is named by its SHA-256. */
export interface BookChunksTable {
  sha256: string;
  seq: number;
  data: Buffer;
}

/**
 * The database's tables as Kysely sees them. The store's own are here; a folder above the store
 * that owns tables adds them to this interface where it declares them (the outbox's `deliveries`
 * and `delivery_attempts`: outbox/schema.ts), and makes them in its own migrations (owners.ts).
 */
export interface Database {
  calls: CallsTable;
  call_answers: CallAnswersTable;
  schools: SchoolsTable;
  templates: TemplatesTable;
  books: BooksTable;
  users: UsersTable;
  sessions: SessionsTable;
  audit: AuditTable;
  limit_slots: LimitSlotsTable;
  book_chunks: BookChunksTable;
  instances: InstancesTable;
  call_hours: CallHoursTable;
  call_error_hours: CallErrorHoursTable;
  call_rollup_state: CallRollupStateTable;
  delivery_hours: DeliveryHoursTable;
  delivery_rollup_state: CallRollupStateTable;
  school_call_hours: SchoolCallHoursTable;
  school_call_error_hours: SchoolCallErrorHoursTable;
  school_delivery_hours: SchoolDeliveryHoursTable;
}

/** Calls per hour, operation, outcome and latency bin: the Dashboard's roll-ups (call-rollups.ts). */
export interface CallHoursTable {
  /** The hour's start, epoch milliseconds. */
  hour: number;
  operation: string | null;
  outcome: Outcome;
  /** floor(ln(duration_ms + 1) × 8). */
  bin: number;
  count: number;
}

/** Errors per hour, operation, status, outcome and text (its first 200 characters). */
export interface CallErrorHoursTable {
  hour: number;
  operation: string | null;
  status: number;
  outcome: Outcome;
  error: string | null;
  count: number;
}

/**
 * Deliveries per hour queued, status, and whether the `log` provider took them (1) or not (0),
 * with their attempts: the Dashboard's roll-ups of the outbox (stats/delivery-rollups.ts).
 */
export interface DeliveryHoursTable {
  hour: number;
  status: DeliveryStatus;
  logged: number;
  count: number;
  attempts: number;
}

/**
 * The same roll-ups per school, of the calls and deliveries that belong to one (migration 0025):
 * a scoped user's Dashboard reads its schools' rows, the organisation's reads the tables above.
 * Made in the same steps, under the same watermarks, as those.
 */
export interface SchoolCallHoursTable extends CallHoursTable {
  school_id: number;
}
export interface SchoolCallErrorHoursTable extends CallErrorHoursTable {
  school_id: number;
}
export interface SchoolDeliveryHoursTable extends DeliveryHoursTable {
  school_id: number;
}

/**
 * One row (id 1): the hours before `rolled_until` are in the roll-ups; null while none is
 * (`call_rollup_state` for the calls', `delivery_rollup_state` for the deliveries').
 */
export interface CallRollupStateTable {
  id: number;
  rolled_until: number | null;
}

/**
 * The server processes sharing the database (PostgreSQL): each announces itself every second, by
 * the database's clock, so the others can tell when it has gone silent (docs/outbox.md).
 */
export interface InstancesTable {
  id: string;
  started_at: number;
  seen_at: number;
}

/**
 * The tables that hold the service's data, parents before the rows that refer to them
 * (calls → call_answers, deliveries → calls, delivery_attempts → deliveries); each has an `id` identity. What
 * `migrate-data` copies; sessions are not data (staff log in again), book bytes go separately.
 */
export const COPIED_TABLES = [
  'users',
  'audit',
  'schools',
  'templates',
  'books',
  'call_answers',
  'calls',
  'deliveries',
  'delivery_attempts',
  'limit_slots',
] as const satisfies readonly (keyof Database)[];
