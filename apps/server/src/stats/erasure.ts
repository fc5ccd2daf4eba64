import type { Transaction } from 'kysely';
import type { Database } from '../store/index.js';

/** A phone number as looked for in texts (privacy/phone-forms.ts). */
export interface NumberInRollups {
  /** A LIKE pattern every spelling matches (its digits in order). */
  readonly pattern: string;
  holds(text: string | null | undefined): boolean;
  scrub(text: string): string;
}

/** The roll-ups that keep error texts: the organisation's, and per school (migration 0025). */
export const ERROR_TEXT_ROLLUPS = ['call_error_hours', 'school_call_error_hours'] as const;

/**
 * The roll-ups' part in erasing a phone number: the Dashboard's errors by text
 * (ERROR_TEXT_ROLLUPS, call-rollups.ts) keep each error's first 200 characters, and an error may
 * quote what a caller sent. Each such text has the number replaced by `[erased]`, in the caller's
 * transaction; the counts stay. (`call_hours`, `delivery_hours` and theirs per school hold no
 * text.) Answers how many rows changed. The tables are small (hours × distinct errors): read whole.
 */
export async function eraseFromRollups(trx: Transaction<Database>, number: NumberInRollups): Promise<number> {
  let changed = 0;
  for (const table of ERROR_TEXT_ROLLUPS) {
    const texts = new Map<string, Set<number>>();
    const rows = await trx
      .selectFrom(table)
      .select(['hour', 'error'])
      .where('error', 'like', number.pattern)
      .execute();
    for (const row of rows) {
      if (row.error === null || !number.holds(row.error)) continue;
      const hours = texts.get(row.error) ?? new Set<number>();
      hours.add(Number(row.hour));
      texts.set(row.error, hours);
    }
    for (const [error, hours] of texts) {
      const result = await trx
        .updateTable(table)
        .set({ error: number.scrub(error) })
        .where('error', '=', error)
        .where('hour', 'in', [...hours])
        .executeTakeFirst();
      changed += Number(result.numUpdatedRows);
    }
  }
  return changed;
}
