import type { PrivacyErasure, ValidateOptions } from '@school/contract';
import { sql, type Transaction } from 'kysely';
import { type CallScan, callsHolding, eraseFromCalls, type HeldIn, heldIn } from '../history/erasure.js';
import type { AttemptRow, DeliveryRow } from '../outbox/deliveries.js';
import {
  attemptsOfDeliveries,
  cancelOnTheirWay,
  deliveriesHolding,
  eraseFromDeliveries,
  smsRecipients,
} from '../outbox/erasure.js';
import type { Sealer } from '../secrets/sealer.js';
import { ERROR_TEXT_ROLLUPS, eraseFromRollups } from '../stats/erasure.js';
import type { AuditRow, CallRow, Database, Store } from '../store/index.js';
import { type PhoneForms, phoneForms } from './phone-forms.js';

/**
 * A parent's phone number: everything held about it (the report), and its erasure from every place
 * it is held (docs/security.md#a-parents-phone-number-report-and-erasure). History finds the calls,
 * the outbox their deliveries and attempts, the statistics their roll-ups; this runs the whole, with
 * the audit and the limits, and what the disk must then do so that the number is gone from it too.
 */

type Region = ValidateOptions['defaultPhoneRegion'];

/** What typed as a phone number reads as none (answered as a 400). */
export class UnreadablePhoneError extends Error {
  override name = 'UnreadablePhoneError';
  constructor(readonly typed: string) {
    super('This is not a phone number. Write it with + and the country code, or as dialled at home.');
  }
}

export interface PrivacyDeps {
  readonly store: Store;
  /** History reading the primary: what must be erased includes the calls just recorded. */
  readonly history: CallScan;
  /** The keyed hash the erasure is audited by. */
  readonly sealer: Pick<Sealer, 'keyedHash'>;
  readonly defaultPhoneRegion: Region;
  /** How long a delivery's attempt may hold it (the outbox's lease): the wait for one under way. */
  readonly leaseMs: number;
}

/** What the report holds, as rows; the API and `pnpm admin` give it its shape. */
export interface Findings {
  readonly forms: PhoneForms;
  readonly calls: readonly { readonly row: CallRow; readonly heldIn: HeldIn[] }[];
  readonly deliveries: readonly DeliveryRow[];
  readonly attempts: readonly AttemptRow[];
  readonly audit: readonly AuditRow[];
  readonly limitSlots: number;
}

/** The purpose the erasure's keyed hash is made for (secrets/sealer.ts keyedHash). */
export const ERASURE_HASH_PURPOSE = 'erased-phone';

/** The number `typed` names, or UnreadablePhoneError. */
export function readNumber(typed: string, region: Region): PhoneForms {
  const forms = phoneForms(typed, region);
  if (!forms) throw new UnreadablePhoneError(typed);
  return forms;
}

/** The keyed hash of a number: what its erasure is audited and listed by. */
export const erasureHash = (sealer: Pick<Sealer, 'keyedHash'>, e164: string): string =>
  sealer.keyedHash(e164, ERASURE_HASH_PURPOSE);

/**
 * The audit entries whose target or details name the number (a send from the console keeps its
 * parameters). The audit is staff's actions: small, read whole.
 */
async function auditHolding(db: Transaction<Database> | Store['db'], forms: PhoneForms): Promise<AuditRow[]> {
  const { pattern } = forms;
  const rows = await db
    .selectFrom('audit')
    .selectAll()
    .where((eb) => eb.or([eb('target', 'like', pattern), eb('details', 'like', pattern)]))
    .execute();
  return rows
    .filter((row) => forms.holds(row.target) || forms.holds(row.details))
    .sort((a, b) => b.at - a.at || b.id - a.id);
}

/** Everything held about the number `typed`. */
export async function findHeld(deps: PrivacyDeps, typed: string): Promise<Findings> {
  const { store } = deps;
  const forms = readNumber(typed, deps.defaultPhoneRegion);
  const calls = await callsHolding(deps.history, forms);
  const deliveries = await deliveriesHolding(store.db, calls, forms.e164);
  const attempts = await attemptsOfDeliveries(store.db, deliveries);
  const audit = await auditHolding(store.db, forms);
  const slots = await store.db
    .selectFrom('limit_slots')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('key', '=', forms.e164)
    .executeTakeFirstOrThrow();
  return {
    forms,
    calls: calls.map((row) => ({ row, heldIn: heldIn(row, forms) })),
    deliveries,
    attempts,
    audit,
    limitSlots: Number(slots.n),
  };
}

/**
 * Erases the number `typed` from every place it is held, on either database and in every
 * partition:
 *   1. the calls that hold it and their deliveries are found (History's search, the outbox);
 *   2. their deliveries still on their way are cancelled, and those being sent waited for: nothing
 *      is sent to the number once this returns;
 *   3. in one transaction: the calls, the deliveries and their attempts, the audit entries and the
 *      Dashboard's error texts are rewritten with `[erased]` in the number's place (counts stay),
 *      the phone column emptied, the SMS's recipient and sealed text gone, the limit slots kept for
 *      it deleted;
 *   4. the disk: on SQLite (secure_delete on, store/db.ts) the write-ahead log is checkpointed and
 *      truncated, so neither file holds the old pages; on PostgreSQL the tables and partitions
 *      rewritten are VACUUMed (what that does and does not do: docs/security.md).
 * Answers what was changed; the caller audits it by `hash`, never by the number.
 */
export async function eraseNumber(deps: PrivacyDeps, typed: string): Promise<PrivacyErasure> {
  const started = performance.now();
  const { store } = deps;
  const forms = readNumber(typed, deps.defaultPhoneRegion);
  const calls = await callsHolding(deps.history, forms);
  const deliveries = await deliveriesHolding(store.db, calls, forms.e164);
  const cancelled = await cancelOnTheirWay(store.db, deliveries, { waitMs: deps.leaseMs });
  const changed = await store.db.transaction().execute(async (trx) => {
    const fromCalls = await eraseFromCalls(trx, store.dialect, calls, forms);
    const fromDeliveries = await eraseFromDeliveries(trx, store.dialect, deliveries, forms);
    let audit = 0;
    for (const row of await auditHolding(trx, forms)) {
      await trx
        .updateTable('audit')
        .set({
          target: row.target === null ? null : forms.scrub(row.target),
          details: row.details === null ? null : forms.scrub(row.details),
        })
        .where('id', '=', row.id)
        .execute();
      audit++;
    }
    const slots = await trx.deleteFrom('limit_slots').where('key', '=', forms.e164).executeTakeFirst();
    const rollups = await eraseFromRollups(trx, forms);
    return {
      calls: fromCalls.calls,
      deliveries: fromDeliveries.deliveries,
      attempts: fromDeliveries.attempts,
      audit,
      limitSlots: Number(slots.numDeletedRows),
      rollups,
      tables: [
        ...new Set([
          ...fromCalls.tables,
          ...fromDeliveries.tables,
          ...(audit > 0 ? ['audit'] : []),
          ...(slots.numDeletedRows > 0n ? ['limit_slots'] : []),
          ...(rollups > 0 ? ERROR_TEXT_ROLLUPS : []),
        ]),
      ],
    };
  });
  const disk =
    store.dialect === 'sqlite'
      ? { walTruncated: await truncateWal(store), vacuumed: [] }
      : { walTruncated: null, vacuumed: await vacuum(store, changed.tables) };
  return {
    hash: erasureHash(deps.sealer, forms.e164),
    calls: changed.calls,
    deliveries: changed.deliveries,
    cancelled,
    attempts: changed.attempts,
    audit: changed.audit,
    limitSlots: changed.limitSlots,
    rollups: changed.rollups,
    disk,
    tookMs: Math.round((performance.now() - started) * 10) / 10,
  };
}

/** How long a truncating checkpoint waits for a reader, each try (the connection is held meanwhile). */
const CHECKPOINT_BUSY_MS = 200;
const CHECKPOINT_TRIES = 25;

/**
 * SQLite: the write-ahead log checkpointed into the database and truncated to nothing, so that no
 * frame of it (the pages as they were before the erasure) is left in the file. Run holding the
 * store's connection, between its transactions. A reader (a History search in its worker, a
 * backup) may hold the log a while: tried again for a few seconds. Answers whether it was done.
 */
async function truncateWal(store: Store): Promise<boolean> {
  const sqlite = store.sqlite;
  if (!sqlite) return false;
  for (let i = 0; i < CHECKPOINT_TRIES; i++) {
    const done = await store.db.connection().execute(async () => {
      const before = sqlite.pragma('busy_timeout', { simple: true }) as number;
      sqlite.pragma(`busy_timeout = ${CHECKPOINT_BUSY_MS}`);
      try {
        const [row] = sqlite.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
        return row?.busy === 0;
      } finally {
        sqlite.pragma(`busy_timeout = ${before}`);
      }
    });
    if (done) return true;
    await new Promise((resolve) => setTimeout(resolve, CHECKPOINT_BUSY_MS));
  }
  return false;
}

/** A table or partition's name as the catalogue writes it (`calls_p20261101`, `"public"."x"`). */
const TABLE_NAME = /^[A-Za-z0-9_."]+$/;

/**
 * PostgreSQL: VACUUM of each table and partition the erasure rewrote: the rows' old versions (which
 * still hold the number) are made free space, to be overwritten by later rows; it does not
 * overwrite them itself, nor shrink the files (VACUUM FULL or pg_repack rewrite them), nor reach
 * the WAL already written, its archive, a replica's files or a backup (docs/security.md). Answers
 * the tables vacuumed.
 */
async function vacuum(store: Store, tables: readonly string[]): Promise<string[]> {
  const done: string[] = [];
  for (const table of tables) {
    if (!TABLE_NAME.test(table)) continue;
    await sql`VACUUM ${sql.raw(table)}`.execute(store.db);
    done.push(table);
  }
  return done;
}

/**
 * The numbers whose keyed hash (erasureHash) is one of `hashes`, among those the calls' phone
 * column and the SMS' recipients hold: an erasure made again by its hash alone, after a backup
 * taken before it was restored (docs/deployment.md#erasures-and-backups). Every distinct number is
 * hashed (the phone's index and the recipients' index, read whole). A number held only in the
 * texts of calls recorded before calls kept their phone cannot be found so. Answers hash → E.164.
 */
export async function numbersByHash(
  deps: Pick<PrivacyDeps, 'store' | 'sealer'>,
  hashes: readonly string[],
): Promise<Map<string, string>> {
  const wanted = new Set(hashes.map((h) => h.toLowerCase()));
  const found = new Map<string, string>();
  const phones = await deps.store.db
    .selectFrom('calls')
    .select('phone')
    .distinct()
    .where('phone', 'is not', null)
    .execute();
  const numbers = new Set<string>([
    ...phones.map((r) => r.phone as string),
    ...(await smsRecipients(deps.store.db)),
  ]);
  for (const number of numbers) {
    const hash = erasureHash(deps.sealer, number);
    if (wanted.has(hash)) found.set(hash, number);
  }
  return found;
}
