import { ERASED } from '@school/contract';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, DialectName } from '../store/index.js';
import type { AttemptRow, DeliveryRow } from './deliveries.js';
import { QUEUED_WITHIN_MS } from './schema.js';

/**
 * The outbox's part in erasing a phone number (privacy/erasure.ts runs the whole): finding the
 * deliveries that hold it and their attempts, cancelling those still on their way so that nothing
 * is sent to the number once the erasure returns, and rewriting them with the number gone. Only
 * the outbox queries its tables; this file is its side of the erasure.
 */

/** A delivery by its key: its id and when it was queued (its partition, on PostgreSQL). */
export interface DeliveryKey {
  readonly id: number;
  readonly created_at: number;
}

/** What a text becomes once the number is gone from it (unchanged when it never held it). */
export interface Scrubber {
  /** The number, E.164: an SMS's recipient. */
  readonly e164: string;
  holds(text: string | null | undefined): boolean;
  scrub(text: string): string;
}

/** Ids per statement: well under either database's limit on bound parameters. */
const BATCH = 500;

function batches<T>(items: readonly T[], size = BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** [min, max] of some times. */
function span(times: readonly number[]): [number, number] {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const t of times) {
    min = Math.min(min, t);
    max = Math.max(max, t);
  }
  return [min, max];
}

/**
 * The deliveries that hold the number: those the calls queued (each queued within QUEUED_WITHIN_MS
 * of its call: the bound keeps PostgreSQL to those partitions), and every SMS whose recipient it
 * is, newest first: read whole, no index (migration 0027 dropped the recipient's: an erasure's
 * seconds are its search of the calls' texts, the SMS' read a fraction of one).
 */
export async function deliveriesHolding(
  db: Kysely<Database>,
  calls: readonly { readonly id: number; readonly at: number }[],
  recipient: string,
): Promise<DeliveryRow[]> {
  const found = new Map<number, DeliveryRow>();
  const byTime = [...calls].sort((a, b) => a.at - b.at);
  for (const batch of batches(byTime)) {
    const [from, to] = span(batch.map((c) => c.at));
    const rows = await db
      .selectFrom('deliveries')
      .selectAll()
      .where(
        'call_id',
        'in',
        batch.map((c) => c.id),
      )
      .where('created_at', '>=', from)
      .where('created_at', '<=', to + QUEUED_WITHIN_MS)
      .execute();
    for (const row of rows) found.set(row.id, row);
  }
  const sent = await db.selectFrom('deliveries').selectAll().where('recipient', '=', recipient).execute();
  for (const row of sent) found.set(row.id, row);
  return [...found.values()].sort((a, b) => b.created_at - a.created_at || b.id - a.id);
}

/** The attempts of the deliveries, oldest first (an attempt starts after its delivery was queued). */
export async function attemptsOfDeliveries(
  db: Kysely<Database>,
  deliveries: readonly DeliveryKey[],
): Promise<AttemptRow[]> {
  const out: AttemptRow[] = [];
  const byTime = [...deliveries].sort((a, b) => a.created_at - b.created_at);
  for (const batch of batches(byTime)) {
    const [from] = span(batch.map((d) => d.created_at));
    out.push(
      ...(await db
        .selectFrom('delivery_attempts')
        .selectAll()
        .where(
          'delivery_id',
          'in',
          batch.map((d) => d.id),
        )
        .where('started_at', '>=', from)
        .execute()),
    );
  }
  return out.sort((a, b) => a.started_at - b.started_at || a.id - b.id);
}

const CANCELLED = 'Cancelled: the phone number was erased (never sent after the erasure).';
const LOST =
  'Cut short and cancelled: the phone number was erased while this attempt held it past its lease.';

export interface CancelOptions {
  /** How long to wait for attempts under way to end (the outbox's lease: no attempt lasts longer). */
  readonly waitMs: number;
  /** How often to look again meanwhile. */
  readonly pollMs?: number;
  readonly now?: () => number;
}

/**
 * Cancels the deliveries among `keys` still on their way, so that none is sent once this returns:
 * a pending one is expired at once, its sealed text destroyed (no claim can take it: a claim takes
 * pending ones only, and on PostgreSQL this update waits for a claim that holds it and then finds it
 * `sending`). One being sent is waited for — its attempt is with the provider already — and when
 * it ends it is settled, or pending again and expired at the next look. One whose attempt outlives
 * `waitMs` (its instance gone) is taken as cut short, as recovery would, and expired. Answers how
 * many were cancelled.
 */
export async function cancelOnTheirWay(
  db: Kysely<Database>,
  keys: readonly DeliveryKey[],
  options: CancelOptions,
): Promise<number> {
  if (keys.length === 0) return 0;
  const now = options.now ?? Date.now;
  const pollMs = options.pollMs ?? 50;
  const started = now();
  let cancelled = 0;
  const groups = batches([...keys].sort((a, b) => a.created_at - b.created_at)).map((batch) => {
    const [from, to] = span(batch.map((k) => k.created_at));
    return { ids: batch.map((k) => k.id), from, to };
  });
  for (;;) {
    const sending: DeliveryKey[] = [];
    let pending = false;
    for (const g of groups) {
      const at = now();
      const expired = await db
        .updateTable('deliveries')
        .set({
          status: 'expired',
          secret: null,
          last_error: CANCELLED,
          lease_until: null,
          leased_by: null,
          updated_at: at,
        })
        .where('id', 'in', g.ids)
        .where('created_at', '>=', g.from)
        .where('created_at', '<=', g.to)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      cancelled += Number(expired.numUpdatedRows);
      // Still on its way: being sent, or pending again since (an attempt that ended in a retry
      // between the update and this read), expired at the next look.
      const left = await db
        .selectFrom('deliveries')
        .select(['id', 'created_at', 'status'])
        .where('id', 'in', g.ids)
        .where('created_at', '>=', g.from)
        .where('created_at', '<=', g.to)
        .where('status', 'in', ['pending', 'sending'])
        .execute();
      for (const row of left) {
        if (row.status === 'pending') pending = true;
        else sending.push({ id: row.id, created_at: row.created_at });
      }
    }
    if (pending) continue;
    if (sending.length === 0) return cancelled;
    if (now() - started >= options.waitMs) {
      cancelled += await cutShort(db, sending, now());
      return cancelled;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Deliveries still `sending` after the wait: their open attempts interrupted, they expired. */
async function cutShort(db: Kysely<Database>, keys: readonly DeliveryKey[], now: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    let n = 0;
    for (const batch of batches(keys)) {
      const ids = batch.map((k) => k.id);
      const [from] = span(batch.map((k) => k.created_at));
      await trx
        .updateTable('delivery_attempts')
        .set({ outcome: 'interrupted', finished_at: now, error: LOST })
        .where('delivery_id', 'in', ids)
        .where('started_at', '>=', from)
        .where('outcome', 'is', null)
        .execute();
      const done = await trx
        .updateTable('deliveries')
        .set({
          status: 'expired',
          secret: null,
          last_error: LOST,
          lease_until: null,
          leased_by: null,
          updated_at: now,
        })
        .where('id', 'in', ids)
        .where('status', '=', 'sending')
        .executeTakeFirst();
      n += Number(done.numUpdatedRows);
    }
    return n;
  });
}

/** What erasing the number from deliveries changed. */
export interface DeliveriesErased {
  /** Deliveries rewritten. */
  readonly deliveries: number;
  /** Attempts rewritten. */
  readonly attempts: number;
  /** PostgreSQL: the tables (partitions) rows were rewritten in, for VACUUM; SQLite: none. */
  readonly tables: readonly string[];
}

/** `tableoid::regclass` on PostgreSQL: the partition a row is in. */
const partitionOf = sql<string>`tableoid::regclass::text`.as('partition_name');

/**
 * Rewrites the deliveries `keys` and their attempts without the number, in the caller's
 * transaction: an SMS's recipient becomes ERASED and its sealed text is destroyed (it can no
 * longer be resent), and the number is replaced by ERASED in the payload (what the console shows),
 * the last error and the provider's status, and in each attempt's error and provider answer. The
 * rows stay, with their status, times and provider ids: the counts and the Dashboard stay true.
 * Cancel what is on its way first (cancelOnTheirWay).
 */
export async function eraseFromDeliveries(
  trx: Transaction<Database>,
  dialect: DialectName,
  keys: readonly DeliveryKey[],
  scrubber: Scrubber,
): Promise<DeliveriesErased> {
  const pg = dialect === 'postgres';
  const tables = new Set<string>();
  let deliveries = 0;
  let attempts = 0;
  const text = (value: string | null): string | null => (value === null ? null : scrubber.scrub(value));
  for (const batch of batches([...keys].sort((a, b) => a.created_at - b.created_at))) {
    const ids = batch.map((k) => k.id);
    const [from, to] = span(batch.map((k) => k.created_at));
    const base = trx
      .selectFrom('deliveries')
      .where('id', 'in', ids)
      .where('created_at', '>=', from)
      .where('created_at', '<=', to);
    const rows = pg
      ? await base.selectAll().select(partitionOf).forUpdate().execute()
      : await base.selectAll().execute();
    for (const row of rows) {
      const recipient =
        row.recipient === scrubber.e164 || scrubber.holds(row.recipient)
          ? ERASED
          : scrubber.scrub(row.recipient);
      // Cancelled already (cancelOnTheirWay); one pending still, queued meanwhile, is expired here
      // too: without its sealed text it could only be sent empty.
      const expire = row.status === 'pending';
      const changes = {
        recipient,
        payload: scrubber.scrub(row.payload),
        secret: row.kind === 'sms' ? null : row.secret,
        last_error: expire ? CANCELLED : text(row.last_error),
        provider_status: text(row.provider_status),
        status: expire ? ('expired' as const) : row.status,
      };
      const changed =
        changes.status !== row.status ||
        changes.recipient !== row.recipient ||
        changes.payload !== row.payload ||
        changes.secret !== row.secret ||
        changes.last_error !== row.last_error ||
        changes.provider_status !== row.provider_status;
      if (!changed) continue;
      await trx
        .updateTable('deliveries')
        .set(changes)
        .where('id', '=', row.id)
        .where('created_at', '=', row.created_at)
        .execute();
      deliveries++;
      if (pg) tables.add((row as typeof row & { partition_name: string }).partition_name);
    }
    const attemptBase = trx
      .selectFrom('delivery_attempts')
      .where('delivery_id', 'in', ids)
      .where('started_at', '>=', from);
    const attemptRows = pg
      ? await attemptBase.selectAll().select(partitionOf).forUpdate().execute()
      : await attemptBase.selectAll().execute();
    for (const row of attemptRows) {
      const changes = { error: text(row.error), response: text(row.response) };
      if (changes.error === row.error && changes.response === row.response) continue;
      await trx
        .updateTable('delivery_attempts')
        .set(changes)
        .where('id', '=', row.id)
        .where('started_at', '=', row.started_at)
        .execute();
      attempts++;
      if (pg) tables.add((row as typeof row & { partition_name: string }).partition_name);
    }
  }
  return { deliveries, attempts, tables: [...tables] };
}

/**
 * Every number an SMS was queued to (the deliveries read whole): for finding a number again by its
 * keyed hash after a restore (privacy/erasure.ts numbersByHash).
 */
export async function smsRecipients(db: Kysely<Database>): Promise<string[]> {
  const rows = await db
    .selectFrom('deliveries')
    .select('recipient')
    .distinct()
    .where('kind', '=', 'sms')
    .execute();
  return rows.map((r) => r.recipient);
}
