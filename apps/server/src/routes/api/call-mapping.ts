import type { CallDetail, CallFilters, CallSchool, CallSummary } from '@school/contract';
import type { FastifyReply } from 'fastify';
import { type CallCursor, type CallQuery, SearchBusyError, SearchClosedError } from '../../history/index.js';
import { problem, sendProblem } from '../../http/problem.js';
import { type DeliveryRepository, recipientNeedles } from '../../outbox/index.js';
import type { CallRow, CallSummaryRow, SchoolRepository, SchoolScope } from '../../store/index.js';

/**
 * How a stored value becomes a JSON value and a CSV cell. `plain` is for numbers and the contract's
 * fixed names (bindings, outcomes), which need no quoting; `text` may hold anything a caller sent,
 * so its CSV cell is quoted and guarded against formulas; `params` is JSON text: parsed for the
 * API, spliced unparsed into exports (see detailJson).
 */
const FORMATS = {
  plain: { json: (v: unknown) => v, csv: (v: unknown) => (v === null ? '' : plainText(v)) },
  text: { json: (v: unknown) => v, csv: (v: unknown) => csvCell(v as string | null) },
  time: { json: (v: unknown) => isoTime(v), csv: (v: unknown) => isoTime(v) },
  ms: { json: (v: unknown) => roundMs(v), csv: (v: unknown) => plainText(roundMs(v)) },
  params: {
    json: (v: unknown) => (v === null ? null : JSON.parse(v as string)),
    csv: (v: unknown) => csvCell(v as string | null),
  },
} as const satisfies Record<string, { json(v: unknown): unknown; csv(v: unknown): string }>;

const isoTime = (ms: unknown): string => new Date(ms as number).toISOString();
/**
 * A value as String() writes it. A finite number is written by JSON.stringify, which gives the
 * same text without going through V8's number-to-string cache: a string kept there is referenced
 * from the old generation, so each call id's string written by String() outlived young-generation
 * GCs and a CSV export's heap grew until a full GC (docs/performance.md#exports-of-all-calls).
 */
const plainText = (v: unknown): string =>
  typeof v === 'number' && Number.isFinite(v) ? JSON.stringify(v) : String(v);
const roundMs = (ms: unknown): number => Math.round((ms as number) * 1000) / 1000;

interface Column {
  /** The column of the calls table. */
  readonly row: keyof CallRow;
  /** Its name in CallSummary / CallDetail, and its CSV header. */
  readonly json: keyof CallDetail;
  readonly format: keyof typeof FORMATS;
  /** Summaries (lists, live tail) carry it, not only CallDetail. */
  readonly summary: boolean;
  /** The CSV export has it (no raw messages, no note). */
  readonly csv: boolean;
}

/** A call as the API shows it, in CallDetail's order: the one list of its fields. */
const CALL_COLUMNS = [
  { row: 'id', json: 'id', format: 'plain', summary: true, csv: true },
  { row: 'at', json: 'at', format: 'time', summary: true, csv: true },
  { row: 'group_name', json: 'group', format: 'text', summary: true, csv: true },
  { row: 'operation', json: 'operation', format: 'text', summary: true, csv: true },
  { row: 'binding', json: 'binding', format: 'plain', summary: true, csv: true },
  { row: 'caller_ip', json: 'callerIp', format: 'text', summary: true, csv: true },
  { row: 'user_agent', json: 'userAgent', format: 'text', summary: true, csv: true },
  { row: 'params', json: 'params', format: 'params', summary: true, csv: true },
  { row: 'outcome', json: 'outcome', format: 'plain', summary: true, csv: true },
  { row: 'status', json: 'status', format: 'plain', summary: true, csv: true },
  { row: 'error', json: 'error', format: 'text', summary: true, csv: true },
  { row: 'duration_ms', json: 'durationMs', format: 'ms', summary: true, csv: true },
  { row: 'note', json: 'note', format: 'text', summary: true, csv: false },
  { row: 'request_id', json: 'requestId', format: 'text', summary: true, csv: false },
  { row: 'request', json: 'request', format: 'text', summary: false, csv: false },
  { row: 'request_bytes', json: 'requestBytes', format: 'plain', summary: false, csv: false },
  { row: 'response', json: 'response', format: 'text', summary: false, csv: false },
  { row: 'response_bytes', json: 'responseBytes', format: 'plain', summary: false, csv: false },
] as const satisfies readonly Column[];

type CallColumn = (typeof CALL_COLUMNS)[number];
type SummaryColumn = Extract<CallColumn, { summary: true }>;
type CsvColumn = Extract<CallColumn, { csv: true }>;
/** Summaries and the CSV are read from rows without the raw messages. */
type FromSummaryRow = Column & { readonly row: keyof CallSummaryRow };
const SUMMARY_COLUMNS: readonly FromSummaryRow[] = CALL_COLUMNS.filter((c): c is SummaryColumn => c.summary);
const CSV_COLUMNS: readonly FromSummaryRow[] = CALL_COLUMNS.filter((c): c is CsvColumn => c.csv);

// Every field of CallSummary has a summary column, and every field of CallDetail a column: a field
// added to the contract fails to compile here until it has one.
// (`delivery` is not a column of calls: the list adds it from the outbox, see withDeliveries;
// `school` is its column `school_id` with the school's name, see schoolOf.)
type Missing =
  | Exclude<keyof CallSummary, SummaryColumn['json'] | 'delivery' | 'school'>
  | Exclude<keyof CallDetail, CallColumn['json'] | 'delivery' | 'school'>;
const everyFieldHasAColumn: [Missing] extends [never] ? true : Missing = true;
void everyFieldHasAColumn;

/** A row's fields as JSON values, keyed by their JSON names. */
function toJson(row: CallSummaryRow, columns: readonly Column[]): Record<string, unknown> {
  const fields = row as Readonly<Record<string, unknown>>;
  const json: Record<string, unknown> = {};
  for (const c of columns) json[c.json] = FORMATS[c.format].json(fields[c.row]);
  return json;
}

export function toSummary(row: CallSummaryRow): CallSummary {
  return toJson(row, SUMMARY_COLUMNS) as CallSummary;
}

/** The names of the schools a page's calls belong to, by id (store.schools.namesOf). */
type SchoolNames = Pick<SchoolRepository, 'namesOf'>;

/**
 * A call's school as the API shows it (CallSchool): null when it belongs to none; its name null
 * when the school has been deleted since.
 */
export const schoolOf = (id: number | null, names: ReadonlyMap<number, string>): CallSchool | null =>
  id === null ? null : { id, name: names.get(id) ?? null };

/** The names of the schools of these calls: one query by id, none when no call has a school. */
export const schoolNamesOf = (rows: readonly CallSummaryRow[], schools: SchoolNames) =>
  schools.namesOf(rows.flatMap((row) => (row.school_id === null ? [] : [row.school_id])));

/**
 * Summaries of a page of calls, each with where its deliveries stand (null: it queued none) and
 * the school it belongs to.
 */
export async function withDeliveries(
  rows: readonly CallSummaryRow[],
  deliveries: Pick<DeliveryRepository, 'ofCalls'>,
  schools: SchoolNames,
): Promise<CallSummary[]> {
  const [states, names] = await Promise.all([deliveries.ofCalls(rows), schoolNamesOf(rows, schools)]);
  return rows.map((row) => ({
    ...toSummary(row),
    delivery: states.get(row.id) ?? null,
    school: schoolOf(row.school_id, names),
  }));
}

export function toDetail(row: CallRow): CallDetail {
  return toJson(row, CALL_COLUMNS) as CallDetail;
}

// The API's filters (the contract) and History's (history/call-filters.ts) are one set: a filter
// added to either fails to compile here until the other has it. The school scope is History's
// alone: it comes from the session, never from the query string.
type UnmatchedFilter =
  | Exclude<keyof CallFilters, keyof CallQuery>
  | Exclude<keyof CallQuery, keyof CallFilters | 'scope'>;
const everyFilterOnBothSides: [UnmatchedFilter] extends [never] ? true : UnmatchedFilter = true;
void everyFilterOnBothSides;

/**
 * The API's filters as History's query, read within `scope` (the staff user's schools, or null
 * organisation-wide: staffScope): times from ISO text to epoch milliseconds.
 */
export function toQuery(filters: CallFilters, scope: SchoolScope): CallQuery {
  return {
    scope,
    operation: filters.operation,
    binding: filters.binding,
    outcome: filters.outcome,
    from: filters.from === undefined ? undefined : Date.parse(filters.from),
    to: filters.to === undefined ? undefined : Date.parse(filters.to),
    ip: filters.ip,
    phone: filters.phone,
    delivery: filters.delivery,
    q: filters.q === undefined ? undefined : phoneAsStored(filters.q),
  };
}

/**
 * Free text that reads as a phone number is searched by its digits: `07911 155502` as
 * `7911155502`, found in `+447911155502` and in a national `07911155502` alike (the rule the
 * Deliveries list's recipient filter follows, outbox/delivery-filters.ts). Other text as typed.
 */
function phoneAsStored(q: string): string {
  const needles = recipientNeedles(q);
  return needles.at(-1) ?? q;
}

/** Cursors are opaque to clients: base64url of `at.id`. */
export function encodeCursor(cursor: CallCursor): string {
  return Buffer.from(`${cursor.at}.${cursor.id}`).toString('base64url');
}

export function decodeCursor(text: string): CallCursor | undefined {
  const match = /^(\d{1,16})\.(\d{1,16})$/.exec(Buffer.from(text, 'base64url').toString('latin1'));
  if (!match) return undefined;
  return { at: Number(match[1]), id: Number(match[2]) };
}

export const CSV_HEADER = `${CSV_COLUMNS.map((c) => c.json).join(',')}\r\n`;

/**
 * One CSV line (RFC 4180). A cell that a spreadsheet would run as a formula (leading = + - @,
 * tab or CR) is prefixed with an apostrophe: exported values come from callers.
 */
export function csvLine(row: CallSummaryRow): string {
  // Concatenated cell by cell: this runs a million times in an export, so no arrays per row.
  const fields = row as Readonly<Record<string, unknown>>;
  let line = '';
  for (const cell of CSV_CELLS) line += cell.before + cell.csv(fields[cell.row]);
  return `${line}\r\n`;
}

/** Each CSV column with the separator written before its cell. */
const CSV_CELLS = CSV_COLUMNS.map((c, i) => ({
  row: c.row,
  csv: FORMATS[c.format].csv,
  before: i === 0 ? '' : ',',
}));

/** Each column with the text written before its JSON value: `{"id":`, `,"at":`, … */
const JSON_FIELDS = CALL_COLUMNS.map((c, i) => ({
  row: c.row,
  format: c.format,
  before: `${i === 0 ? '{' : ','}${JSON.stringify(c.json)}:`,
}));

/**
 * A call as CallDetail JSON text, for exports. Written field by field, with no object per row:
 * the stored parameters are already JSON text and are spliced in as they are. Parsing them back
 * into objects, or building intermediate objects, for a million rows is what made the export's
 * memory climb: the objects outlive young-generation collections
 * (docs/performance.md#exports-of-all-calls).
 */
export function detailJson(row: CallRow): string {
  const fields = row as Readonly<Record<string, unknown>>;
  let json = '';
  for (const f of JSON_FIELDS) {
    const value = fields[f.row];
    json +=
      f.before +
      (f.format === 'params'
        ? ((value as string | null) ?? 'null')
        : JSON.stringify(FORMATS[f.format].json(value)));
  }
  return `${json}}`;
}

/** A CSV cell of text a caller may have sent: quoted when it must be, a formula defused (`'=…`). */
export function csvCell(value: string | null): string {
  if (value === null) return '';
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/**
 * A free-text search that could not run: the worker's slots are all taken (503, come back in a
 * moment) or the server is closing. Anything else is rethrown.
 */
export function searchUnavailable(reply: FastifyReply, err: unknown, budgetMs: number): FastifyReply {
  if (err instanceof SearchBusyError) {
    return sendProblem(
      reply.header('retry-after', String(Math.max(1, Math.ceil(budgetMs / 1000)))),
      problem(
        503,
        'Too many free-text searches are running at once. Try again in a moment, or narrow the search by time, operation or binding so that it finishes sooner.',
      ),
    );
  }
  if (err instanceof SearchClosedError) {
    return sendProblem(reply.header('retry-after', '5'), problem(503, 'The server is shutting down.'));
  }
  throw err;
}
