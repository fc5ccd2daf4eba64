import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';
import type { UnitOfWork } from './unit-of-work.js';

/** One limit to check: at most `max` slots per `windowMs` for `key` under `dimension`. */
export interface LimitCheck {
  readonly dimension: string;
  readonly key: string;
  readonly max: number;
  readonly windowMs: number;
}

export type LimitTake =
  | {
      readonly ok: true /** Gives the slots back (what they allowed did not happen). */;
      release(): Promise<void>;
    }
  | {
      readonly ok: false;
      /** Which check refused (its index in the list). */
      readonly refused: number;
      /** When its oldest slot in the window leaves it. */
      readonly retryAfterMs: number;
    };

/**
 * Limits shared by every instance on one database (PostgreSQL): each accepted attempt is a row in
 * `limit_slots`. Checking and taking are one transaction holding an advisory lock per key, so
 * concurrent attempts on any number of instances cannot both take the last slot.
 */
export interface LimitRepository {
  /** Takes one slot under every check, or none: all are checked before any is taken. */
  take(checks: readonly LimitCheck[], now: number): Promise<LimitTake>;
  /** Deletes a key's slots. */
  forget(dimension: string, key: string): Promise<void>;
  /** Deletes slots that no window can still see (taken before `before`). Returns how many. */
  sweep(before: number): Promise<number>;
}

export function createLimitRepository(db: Kysely<Database>, work: UnitOfWork): LimitRepository {
  const release = (ids: readonly number[]) => async () => {
    if (ids.length > 0)
      await db
        .deleteFrom('limit_slots')
        .where('id', 'in', [...ids])
        .execute();
  };

  /**
   * PostgreSQL: the same steps in one round trip, in the database function take_limit_slots
   * (migration 0009) — under every instance's traffic the transaction's six round trips were
   * what limited AuthCode's throughput.
   */
  async function takeOnPostgres(checks: readonly LimitCheck[], now: number): Promise<LimitTake> {
    if (checks.length === 0) return { ok: true, release: async () => {} };
    const { rows } = await sql<{ refused: number; retry_after_ms: number; slot_ids: number[] | null }>`
      SELECT refused, retry_after_ms, slot_ids FROM take_limit_slots(
        ${checks.map((c) => c.dimension)}::text[], ${checks.map((c) => c.key)}::text[],
        ${checks.map((c) => c.max)}::integer[], ${checks.map((c) => c.windowMs)}::bigint[], ${now}::bigint)`.execute(
      db,
    );
    const row = rows[0];
    if (!row) throw new Error('take_limit_slots answered nothing');
    if (row.refused >= 0)
      return { ok: false, refused: row.refused, retryAfterMs: Number(row.retry_after_ms) };
    return { ok: true, release: release((row.slot_ids ?? []).map(Number)) };
  }

  return {
    take(checks, now) {
      if (work.dialect === 'postgres') return takeOnPostgres(checks, now);
      const lockKeys = checks.map((c) => `limit:${c.dimension}:${c.key}`);
      return work.locked(lockKeys, async (trx): Promise<LimitTake> => {
        for (const [i, check] of checks.entries()) {
          // What no window can see any more goes first, so a key's rows stay few.
          await trx
            .deleteFrom('limit_slots')
            .where('dimension', '=', check.dimension)
            .where('key', '=', check.key)
            .where('at', '<=', now - check.windowMs)
            .execute();
          const recent = await trx
            .selectFrom('limit_slots')
            .select('at')
            .where('dimension', '=', check.dimension)
            .where('key', '=', check.key)
            .where('at', '>', now - check.windowMs)
            .orderBy('at', 'desc')
            .limit(check.max)
            .execute();
          if (recent.length >= check.max) {
            const oldest = recent[recent.length - 1]?.at ?? now;
            return { ok: false, refused: i, retryAfterMs: Math.max(1, oldest + check.windowMs - now) };
          }
        }
        if (checks.length === 0) return { ok: true, release: async () => {} };
        const slots = await trx
          .insertInto('limit_slots')
          .values(checks.map((c) => ({ dimension: c.dimension, key: c.key, at: now })))
          .returning('id')
          .execute();
        return { ok: true, release: release(slots.map((s) => s.id)) };
      });
    },
    async forget(dimension, key) {
      await db.deleteFrom('limit_slots').where('dimension', '=', dimension).where('key', '=', key).execute();
    },
    async sweep(before) {
      const result = await db.deleteFrom('limit_slots').where('at', '<', before).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
