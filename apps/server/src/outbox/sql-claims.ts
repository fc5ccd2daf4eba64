import type { DeliveryRow } from './deliveries.js';
import { onTheirWaySince } from './on-their-way.js';
import type { DeliveryKind } from './schema.js';
import { from, type OutboxSqlContext, to } from './sql-context.js';

/** A delivery claimed for one attempt: its row as claimed, and the attempt's row id. */
export interface Claimed {
  readonly delivery: DeliveryRow;
  readonly attemptId: number;
  /**
   * An SMS claimed in its call's own commit (enqueue.ts): its text, handed over in memory rather
   * than opened again from the sealed copy just written. Any later attempt opens the sealed one.
   */
  readonly text?: string;
}

/** A code's attempt on the primary, hedged: the second attempt on `provider`, recorded before it starts. */
export interface HedgeRequest {
  /** The delivery as the primary's attempt claimed it. */
  readonly delivery: DeliveryRow;
  readonly provider: string;
  readonly instance: string;
  readonly now: number;
  readonly leaseUntil: number;
}

/** Who may claim: the provider whose lane claims, the providers whose deliveries it takes. */
export interface ClaimRequest {
  readonly now: number;
  readonly limit: number;
  readonly leaseUntil: number;
  readonly kind: DeliveryKind;
  /** Deliveries routed to these providers (its own, and those it takes over). */
  readonly routedTo: readonly string[];
  /** The provider the attempts go to. */
  readonly provider: string;
  /** The instance whose attempts they are. */
  readonly instance: string;
}

/** `claim` and `hedge`: a delivery's attempt starts, its attempt row written before the provider is called. */
export function claimSql({ store, work, skipLocked }: OutboxSqlContext) {
  return {
    /**
     * `claim`: up to `limit` due deliveries of a kind routed to the given providers become
     * `sending` under a lease held by `instance`, attempts + 1, routed to `provider`, each with an
     * attempt row written before the provider is called — all in one commit.
     */
    claimDue(request: ClaimRequest): Promise<Claimed[]> {
      const { now, limit, kind, routedTo } = request;
      if (limit <= 0 || routedTo.length === 0) return Promise.resolve([]);
      return work.relaxed(async (trx) => {
        const since = await onTheirWaySince(trx, store.dialect);
        if (since === null) return [];
        let pending = trx.selectFrom('deliveries').where('status', 'in', from('claim'));
        if (since !== undefined) pending = pending.where('created_at', '>=', since);
        const due = skipLocked(
          pending
            .select('id')
            .where('kind', '=', kind)
            .where('provider', 'in', [...routedTo])
            .where('next_attempt_at', '<=', now)
            .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
            .orderBy('next_attempt_at')
            .orderBy('id')
            .limit(limit),
        );
        let claim = trx
          .updateTable('deliveries')
          .set((eb) => ({
            status: to('claim'),
            attempts: eb('attempts', '+', 1),
            lease_until: request.leaseUntil,
            leased_by: request.instance,
            provider: request.provider,
            updated_at: now,
          }))
          .where('id', 'in', due);
        // The update's own partitions too: else each would be planned to look for the ids.
        if (since !== undefined) claim = claim.where('created_at', '>=', since);
        const rows = await claim.returningAll().execute();
        if (rows.length === 0) return [];
        const attempts = await trx
          .insertInto('delivery_attempts')
          .values(rows.map((r) => ({ delivery_id: r.id, provider: request.provider, started_at: now })))
          .returning(['id', 'delivery_id'])
          .execute();
        const attemptOf = new Map(attempts.map((a) => [a.delivery_id, a.id]));
        return rows
          .sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.id - b.id)
          .map((delivery) => ({ delivery, attemptId: attemptOf.get(delivery.id) as number }));
      });
    },

    /**
     * `hedge`: a second attempt of a claimed delivery, on `provider`, beside the one under way —
     * attempts + 1, routed to `provider`, its lease renewed, its attempt row written before the
     * provider is called — while this instance's claim still holds it (`sending`, the claim's
     * attempt count, leased by `instance`). Undefined: it no longer does.
     */
    hedge(request: HedgeRequest): Promise<Claimed | undefined> {
      const { delivery, now } = request;
      return work.relaxed(async (trx) => {
        const row = await trx
          .updateTable('deliveries')
          .set((eb) => ({
            attempts: eb('attempts', '+', 1),
            provider: request.provider,
            lease_until: request.leaseUntil,
            updated_at: now,
          }))
          .where('id', '=', delivery.id)
          // Its own partition alone (PostgreSQL).
          .where('created_at', '=', delivery.created_at)
          .where('status', 'in', from('hedge'))
          .where('attempts', '=', delivery.attempts)
          .where('leased_by', '=', request.instance)
          .returningAll()
          .executeTakeFirst();
        if (!row) return undefined;
        const attempt = await trx
          .insertInto('delivery_attempts')
          .values({ delivery_id: row.id, provider: request.provider, started_at: now })
          .returning('id')
          .executeTakeFirstOrThrow();
        return { delivery: row, attemptId: attempt.id };
      });
    },
  };
}
