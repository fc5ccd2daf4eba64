import type { PRIVACY_CALL_FIELDS } from '@school/contract';
import { sql, type Transaction } from 'kysely';
import { type CallRow, type Database, type DialectName, selectCallRow } from '../store/index.js';
import type { CallQuery, TEXT_COLUMNS } from './call-filters.js';
import type { TextQuery } from './search.js';

/**
 * History's part in reporting and erasing a phone number (privacy/erasure.ts runs the whole): the
 * calls that hold it, found as History finds them, and the same calls rewritten without it.
 */

/** A phone number as looked for in calls (privacy/phone-forms.ts). */
export interface NumberInTexts {
  /** E.164: the phone column's value. */
  readonly e164: string;
  /** The LIKE pattern History's free-text search looks for; a hit is a candidate, `holds` decides. */
  readonly pattern: string;
  /** The number's national digits: what names the search. */
  readonly digits: string;
  holds(text: string | null | undefined): boolean;
  scrub(text: string): string;
}

/** History's scan (calls.ts): every call a query matches, in batches. */
export interface CallScan {
  scan(query: CallQuery, batchSize?: number): AsyncGenerator<CallRow[]>;
}

export type HeldIn = (typeof PRIVACY_CALL_FIELDS)[number];

/** The texts of a call the number may be in. */
const TEXTS = ['params', 'request', 'response', 'error', 'note'] as const satisfies readonly HeldIn[];

// Each of them is a text History's search reads (TEXT_COLUMNS), or a call holding the number there
// alone would never be found: a text left out of the search fails to compile here.
type Unsearched = Exclude<(typeof TEXTS)[number], (typeof TEXT_COLUMNS)[number]>;
const everyTextSearched: [Unsearched] extends [never] ? true : Unsearched = true;
void everyTextSearched;

/** Where a call holds the number: its phone column, and which of its texts. */
export function heldIn(row: CallRow, number: NumberInTexts): HeldIn[] {
  const out: HeldIn[] = [];
  if (row.phone === number.e164) out.push('phone');
  for (const column of TEXTS) if (number.holds(row[column])) out.push(column);
  return out;
}

/**
 * The calls that hold the number, newest first: those whose phone is the number (the Phone
 * filter, through the phone's index, in every partition), and those whose parameters, request,
 * answer, error or note hold it in any spelling (History's free-text search, which reads the same
 * texts, for the number's digits in order: calls recorded before calls kept their phone, calls that
 * only mention the number). The search reads every call, as History's free text does: there is no
 * index of the texts.
 */
export async function callsHolding(history: CallScan, number: NumberInTexts): Promise<CallRow[]> {
  const found = new Map<number, CallRow>();
  for await (const batch of history.scan({ phone: number.e164 })) {
    for (const row of batch) found.set(row.id, row);
  }
  const text: TextQuery = { q: number.digits, pattern: number.pattern };
  for await (const batch of history.scan(text)) {
    for (const row of batch) {
      if (!found.has(row.id) && heldIn(row, number).length > 0) found.set(row.id, row);
    }
  }
  return [...found.values()].sort((a, b) => b.at - a.at || b.id - a.id);
}

/** What erasing the number from calls changed. */
export interface CallsErased {
  readonly calls: number;
  /** PostgreSQL: the tables (partitions) rows were rewritten in, for VACUUM; SQLite: none. */
  readonly tables: readonly string[];
}

const BATCH = 500;

/**
 * Rewrites the calls without the number, in the caller's transaction: the number replaced by
 * ERASED (`[erased]`) in the parameters, the request and answer texts, the error and the note, and
 * the phone column emptied (History's Phone filter no longer finds them). The calls stay, with
 * their time, operation, outcome, status and duration: History's counts and the Dashboard's
 * figures stay as they were. Each call is read again here, in the transaction, so that nothing
 * written since it was found is lost.
 */
export async function eraseFromCalls(
  trx: Transaction<Database>,
  dialect: DialectName,
  calls: readonly { readonly id: number; readonly at: number }[],
  number: NumberInTexts,
): Promise<CallsErased> {
  const pg = dialect === 'postgres';
  const tables = new Set<string>();
  let changed = 0;
  const text = (value: string | null): string | null => (value === null ? null : number.scrub(value));
  const byTime = [...calls].sort((a, b) => a.at - b.at);
  for (let i = 0; i < byTime.length; i += BATCH) {
    const batch = byTime.slice(i, i + BATCH);
    const base = trx
      .selectFrom('calls')
      .where(
        'id',
        'in',
        batch.map((c) => c.id),
      )
      .where('at', '>=', (batch[0] as { at: number }).at)
      .where('at', '<=', (batch[batch.length - 1] as { at: number }).at);
    // The response as the call shows it: a canonical answer's text, when recorded by reference.
    const rows = pg
      ? await selectCallRow(base)
          .select(sql<string>`tableoid::regclass::text`.as('partition_name'))
          .forUpdate()
          .execute()
      : await selectCallRow(base).execute();
    for (const row of rows) {
      const response = number.scrub(row.response);
      const changes = {
        params: text(row.params),
        request: number.scrub(row.request),
        response,
        error: text(row.error),
        note: text(row.note),
        phone: row.phone === number.e164 || number.holds(row.phone) ? null : row.phone,
        // A response that changed is the call's own text from now on, no longer a reference.
        ...(response === row.response ? {} : { response_ref: null }),
      };
      if (
        changes.params === row.params &&
        changes.request === row.request &&
        changes.response === row.response &&
        changes.error === row.error &&
        changes.note === row.note &&
        changes.phone === row.phone
      )
        continue;
      await trx.updateTable('calls').set(changes).where('id', '=', row.id).where('at', '=', row.at).execute();
      changed++;
      if (pg) tables.add((row as typeof row & { partition_name: string }).partition_name);
    }
  }
  return { calls: changed, tables: [...tables] };
}
