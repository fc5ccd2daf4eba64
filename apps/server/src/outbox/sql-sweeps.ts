import { sql, type Transaction } from 'kysely';
import { type Database, prepared } from '../store/index.js';
import { onTheirWaySince } from './on-their-way.js';
import { from, type OutboxSqlContext, to } from './sql-context.js';
import { TRANSITIONS } from './states.js';

/** The one status `forget` takes (a literal: 0023's index has it in its predicate). */
const FORGOTTEN = (() => {
  const [only, ...more] = TRANSITIONS.forget.from;
  if (!only || more.length > 0) throw new Error('forget: one status expected');
  return only;
})();

export interface RecoverOptions {
  /** SQLite at start, when this process owns the database alone: every `sending` one. */
  readonly ignoreLeases?: boolean;
  /** Deliveries the caller still holds (an attempt under way, or ended and not yet recorded). */
  readonly except?: { has(id: number): boolean };
  /**
   * PostgreSQL: also those held by another instance that has not announced itself for this long
   * (store's watch connection, every second), however long their lease still runs.
   */
  readonly silentAfterMs?: number;
  /** This instance (its own claims are never another's silent ones). */
  readonly instance?: string;
}

const INTERRUPTED =
  'The attempt was cut short (its server stopped or went silent); it is retried with the same idempotency key.';
const EXPIRED = 'Not sent within its validity; an auth code is never sent late.';

/** `interrupt` of the deliveries `ids` (selected, and locked on PostgreSQL, by the caller). */
async function interrupt(trx: Transaction<Database>, ids: number[], now: number): Promise<void> {
  await trx
    .updateTable('delivery_attempts')
    .set({ outcome: 'interrupted', finished_at: now, error: INTERRUPTED })
    .where('delivery_id', 'in', ids)
    .where('outcome', 'is', null)
    .execute();
  await trx
    .updateTable('deliveries')
    // Its next_attempt_at stays what it was (it was due when claimed): it goes out ahead of what
    // was queued after it.
    .set({ status: to('interrupt'), lease_until: null, leased_by: null, updated_at: now })
    .where('id', 'in', ids)
    .where('status', 'in', from('interrupt'))
    .execute();
}

/**
 * The sweeps: `interrupt` for the attempts cut short, `expire` and `forget` for the auth codes
 * past their validity.
 */
export function sweepSql({ store, work, pg, skipLocked }: OutboxSqlContext) {
  return {
    /**
     * `interrupt`: deliveries left `sending` by an attempt that was cut short — its lease ran
     * out, or (PostgreSQL) its instance has gone silent — are due again at once, with the same
     * idempotency key; their open attempt is recorded `interrupted`. Returns how many.
     */
    recover(now: number, options: RecoverOptions = {}): Promise<number> {
      return work.relaxed(async (trx) => {
        const since = await onTheirWaySince(trx, store.dialect);
        if (since === null) return 0;
        let stuck = trx.selectFrom('deliveries').select('id').where('status', 'in', from('interrupt'));
        if (since !== undefined) stuck = stuck.where('created_at', '>=', since);
        if (!options.ignoreLeases) {
          const silentAfterMs = options.silentAfterMs;
          stuck = stuck.where((eb) => {
            const expired = eb('lease_until', '<', now);
            if (!pg || silentAfterMs === undefined) return expired;
            // Held by another instance that has not announced itself lately, by the database's clock.
            const silent = eb.and([
              eb('leased_by', 'is not', null),
              eb('leased_by', '<>', options.instance ?? ''),
              eb.not(
                eb.exists(
                  eb
                    .selectFrom('instances')
                    .select('instances.id')
                    .whereRef('instances.id', '=', 'deliveries.leased_by')
                    .where(
                      'instances.seen_at',
                      '>',
                      sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint - ${silentAfterMs}`,
                    ),
                ),
              ),
            ]);
            return eb.or([expired, silent]);
          });
        }
        const except = options.except;
        const ids = (await skipLocked(stuck).execute()).map((r) => r.id).filter((id) => !except?.has(id));
        if (ids.length === 0) return 0;
        for (let i = 0; i < ids.length; i += 1000) {
          await interrupt(trx, ids.slice(i, i + 1000), now);
        }
        return ids.length;
      });
    },

    /**
     * `interrupt` for what this instance still holds as it stops cleanly (nothing, when every
     * attempt finished and was recorded): due again at once, for another instance to send.
     */
    releaseHeldBy(instance: string, now: number): Promise<number> {
      return work.relaxed(async (trx) => {
        const ids = (
          await skipLocked(
            trx
              .selectFrom('deliveries')
              .select('id')
              .where('status', 'in', from('interrupt'))
              .where('leased_by', '=', instance),
          ).execute()
        ).map((r) => r.id);
        for (let i = 0; i < ids.length; i += 1000) await interrupt(trx, ids.slice(i, i + 1000), now);
        return ids.length;
      });
    },

    /**
     * `expire` for auth codes past their validity (a claim never takes one, so this runs now and
     * then), and `forget` for dead ones past it: their sealed text is destroyed. Returns how many
     * expired.
     */
    expireStale(now: number): Promise<number> {
      return work.relaxed(async (trx) => {
        // `expire`: codes on their way (pending), so from the oldest delivery on its way on.
        const since = await onTheirWaySince(trx, store.dialect);
        let expiring = trx
          .selectFrom('deliveries')
          .select('id')
          .where('status', 'in', from('expire'))
          .where('expires_at', 'is not', null)
          .where('expires_at', '<=', now);
        if (since !== undefined) expiring = expiring.where('created_at', '>=', since);
        const expired = since === null ? [] : (await skipLocked(expiring).execute()).map((r) => r.id);
        // `forget`: dead ones past it that still hold their text. On PostgreSQL through their own
        // index (0023), in a statement planned once per connection (its first five plans are
        // PostgreSQL's own trials): no bound narrows it to some partitions.
        const { rows: dead } = await prepared(
          'deliveries_dead_sealed_until',
          sql<{ id: number }>`SELECT id FROM deliveries
            WHERE status = ${sql.lit(FORGOTTEN)} AND secret IS NOT NULL AND expires_at <= ${now}
            ${pg ? sql`FOR UPDATE SKIP LOCKED` : sql``}`,
        ).execute(trx);
        const forgotten = dead.map((r) => Number(r.id));
        for (let i = 0; i < forgotten.length; i += 1000) {
          await trx
            .updateTable('deliveries')
            .set({ status: to('forget'), secret: null, updated_at: now })
            .where('id', 'in', forgotten.slice(i, i + 1000))
            .execute();
        }
        for (let i = 0; i < expired.length; i += 1000) {
          await trx
            .updateTable('deliveries')
            .set({ status: to('expire'), secret: null, last_error: EXPIRED, updated_at: now })
            .where('id', 'in', expired.slice(i, i + 1000))
            .execute();
        }
        return expired.length;
      });
    },
  };
}
