import type SQLite from 'better-sqlite3';
import { type Expression, type ExpressionBuilder, type SqlBool, sql, type Transaction } from 'kysely';
import type { Sealer } from '../secrets/sealer.js';
import { type Database, type PostgresTx, prepared, type SqliteTx, type Store } from '../store/index.js';
import type { DeliveryRow } from './deliveries.js';
import { onTheirWaySince } from './on-their-way.js';
import { UNSETTLED_SMS, unsealedText } from './payload.js';
import type { DeliveryKind, DeliveryStatus } from './schema.js';
import { isSettled, type OutboxEvent, TRANSITIONS } from './states.js';

/** The one status `forget` takes (a literal: 0023's index has it in its predicate). */
const FORGOTTEN = (() => {
  const [only, ...more] = TRANSITIONS.forget.from;
  if (!only || more.length > 0) throw new Error('forget: one status expected');
  return only;
})();

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

/** How an attempt ended, and what becomes of its delivery. */
export type AttemptResult =
  | { readonly outcome: 'sent'; readonly providerId?: string | undefined; readonly response: string }
  | {
      readonly outcome: 'transient' | 'permanent';
      readonly error: string;
      readonly status?: number | undefined;
      readonly response?: string | undefined;
      readonly retryAfterMs?: number | undefined;
      /** The next try's time; undefined: the delivery is dead. */
      readonly retryAt: number | undefined;
      /** The provider the next try goes to, when it is another (a failover). */
      readonly nextProvider?: string | undefined;
      /** Whether the provider took the message is not known (a timeout, a connection lost). */
      readonly unsure?: boolean | undefined;
    };

/** `finish` in the caller's transaction: synchronous on SQLite. */
export interface FinishIn {
  (tx: SqliteTx, finished: readonly Finished[]): void;
  (tx: PostgresTx, finished: readonly Finished[]): Promise<void>;
}

export interface Finished {
  readonly claimed: Claimed;
  readonly now: number;
  /** How the attempt ended and, unless `delivery` says otherwise, what becomes of its delivery. */
  readonly result: AttemptResult;
  /**
   * One of a hedged code's two attempts (hedge.ts): `leave`, the attempt alone is recorded (the
   * other settled the delivery, or is still under way); else what becomes of the delivery, with
   * the provider that may have sent it too.
   */
  readonly delivery?: 'leave' | Settlement;
}

/** What a hedged code's settling attempt makes of its delivery. */
export interface Settlement {
  readonly result: AttemptResult;
  /** A provider whose attempt may have sent the message too (null: none). */
  readonly unsureProvider: string | null;
}

/** What a finished attempt makes of its delivery; undefined: its delivery is left as it is. */
export const settlementOf = (f: Finished): AttemptResult | undefined =>
  f.delivery === 'leave' ? undefined : (f.delivery?.result ?? f.result);

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

/** The WHERE condition of an event: the statuses its transition starts from. */
const from = (event: OutboxEvent) => [...TRANSITIONS[event].from];
const to = (event: OutboxEvent): DeliveryStatus => TRANSITIONS[event].to;

/** The outcome a finished attempt's result makes of its delivery. */
const eventOf = (result: AttemptResult): OutboxEvent =>
  result.outcome === 'sent' ? 'sent' : result.retryAt === undefined ? 'fail' : 'retry';

type Ended = {
  /**
   * When its delivery was queued: the bounds that keep PostgreSQL's update to the partitions the
   * batch's rows are in (an attempt starts after its delivery was queued, before it finished).
   */
  readonly queuedAt: number;
  readonly attempt: {
    id: number;
    finished_at: number;
    outcome: string;
    status: number | null;
    error: string | null;
    response: string | null;
    retry_after_ms: number | null;
  };
  /** Null: the delivery is left as it is (a hedged code's other attempt settles it). */
  readonly delivery: {
    id: number;
    attempts: number;
    status: DeliveryStatus;
    next_attempt_at: number;
    provider: string;
    provider_id: string | null;
    last_error: string | null;
    sent_at: number | null;
    secret: string | null;
    updated_at: number;
    /** The provider of this attempt when its outcome is unknown (kept if one was already). */
    unsure_provider: string | null;
  } | null;
};

/** What one finished attempt writes: its attempt row, and its delivery settled or rescheduled. */
function endedOf(finished: Finished): Ended {
  const { claimed, now, result: own } = finished;
  const { delivery, attemptId } = claimed;
  const ownSent = own.outcome === 'sent';
  const attempt = {
    id: attemptId,
    finished_at: now,
    outcome: own.outcome,
    status: ownSent ? null : (own.status ?? null),
    error: ownSent ? null : own.error,
    response: own.response ?? null,
    retry_after_ms: ownSent ? null : (own.retryAfterMs ?? null),
  };
  const result = settlementOf(finished);
  if (result === undefined) return { queuedAt: delivery.created_at, attempt, delivery: null };
  const sent = result.outcome === 'sent';
  const status = to(eventOf(result));
  const settled = typeof finished.delivery === 'object' ? finished.delivery : undefined;
  return {
    queuedAt: delivery.created_at,
    attempt,
    delivery: {
      id: delivery.id,
      attempts: delivery.attempts,
      status,
      next_attempt_at: sent || result.retryAt === undefined ? now : result.retryAt,
      provider: (!sent && result.nextProvider) || delivery.provider,
      provider_id: sent ? (result.providerId ?? null) : delivery.provider_id,
      last_error: sent ? null : result.error,
      sent_at: sent ? now : null,
      secret: isSettled(status) ? null : delivery.secret,
      updated_at: now,
      unsure_provider: settled ? settled.unsureProvider : !sent && result.unsure ? delivery.provider : null,
    },
  };
}

/**
 * The outbox's SQL, every transition of a delivery for both databases in this one file (the
 * conditions from states.ts). On PostgreSQL what several instances could take together is locked
 * with `FOR UPDATE SKIP LOCKED`; SQLite's single writer serialises them already. Bookkeeping runs
 * in the store's relaxed transactions (store/unit-of-work.ts: on SQLite it does not wait for the
 * disk; the next recorded call's commit makes it durable).
 */
/**
 * What else a resend changes in its own transaction (the Dashboard's roll-ups of the deliveries,
 * given by the caller: stats/delivery-rollups.ts): called before the deliveries change, it answers
 * what to do once the oldest resent delivery's `created_at` is known (null: none was resent).
 */
export type ResendHook = (
  trx: Transaction<Database>,
) => Promise<(oldestCreatedAt: number | null) => Promise<void>>;

export function createOutboxSql(store: Store, sealer: Sealer, onResend?: ResendHook) {
  const { db, work } = store;
  const pg = store.dialect === 'postgres';
  const finishOnSqlite = store.sqlite ? sqliteFinisher(store.sqlite) : undefined;

  /** Locks the rows a sweep or claim selects, skipping those another transaction holds (PostgreSQL). */
  const skipLocked = <Q extends { forUpdate(): Q; skipLocked(): Q }>(qb: Q): Q =>
    pg ? qb.forUpdate().skipLocked() : qb;

  /**
   * A dead delivery that can be sent again: a push, or an SMS that still has its sealed text (a
   * dead auth code past its validity has lost it: it could only be sent empty).
   */
  const resendable = (eb: ExpressionBuilder<Database, 'deliveries'>) =>
    eb.or([eb('kind', '=', 'push'), eb('secret', 'is not', null)]);

  /**
   * `resend` of the dead deliveries `which` picks that can be sent again, with `onResend` in the
   * same commit (the Dashboard's roll-ups of their hours dropped: they are dead no more). Answers
   * how many.
   */
  const resend = (
    now: number,
    which: (eb: ExpressionBuilder<Database, 'deliveries'>) => Expression<SqlBool>,
  ) =>
    db.transaction().execute(async (trx) => {
      const resentFrom = await onResend?.(trx);
      // SQLite has no UPDATE in a WITH: the times come back, their oldest is found here.
      const resent = await trx
        .updateTable('deliveries')
        .set({ status: to('resend'), attempts: 0, next_attempt_at: now, updated_at: now })
        .where('status', 'in', from('resend'))
        .where(resendable)
        .where(which)
        .returning('created_at')
        .execute();
      let oldest: number | null = null;
      for (const r of resent) oldest = Math.min(oldest ?? Number.POSITIVE_INFINITY, Number(r.created_at));
      await resentFrom?.(oldest);
      return resent.length;
    });

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

    /**
     * `sent`, `retry` or `fail`: records how attempts ended and settles or reschedules their
     * deliveries, in one commit. A delivery moves only while this claim still holds it (`sending`
     * with the claim's attempt count): if it was taken over (its lease ran out, its instance went
     * silent), the attempt is recorded and the delivery left to the newer claim. Settling destroys
     * an SMS's sealed text.
     */
    async finish(finished: readonly Finished[]): Promise<void> {
      if (finished.length === 0) return;
      const ended = finished.map(endedOf);
      if (finishOnSqlite) {
        await work.relaxedSync((tx) => finishOnSqlite(tx, ended));
        return;
      }
      // A round trip per statement is what costs on PostgreSQL: each batch is one statement.
      await work.relaxed(async (trx) => {
        for (let i = 0; i < ended.length; i += 500) await finishOnPostgres(trx, ended.slice(i, i + 500));
      });
    },

    /**
     * `finish` inside the caller's transaction (a call's durable commit, enqueue.ts): the finished
     * attempts ride in it instead of a commit of their own. SQLite: synchronous statements.
     */
    finishIn: ((tx: SqliteTx | PostgresTx, finished: readonly Finished[]): void | Promise<void> => {
      const ended = finished.map(endedOf);
      if (tx.dialect === 'sqlite') {
        if (!finishOnSqlite) throw new Error('finishIn: not a SQLite store');
        finishOnSqlite(tx, ended);
        return;
      }
      return (async () => {
        for (let i = 0; i < ended.length; i += 500) await finishOnPostgres(tx.trx, ended.slice(i, i + 500));
      })();
    }) as FinishIn,

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

    /** `due-now` for every pending push (pushNoti). Returns how many. */
    async makePushesDue(now: number): Promise<number> {
      // Pending ones, so from the oldest delivery on its way on (a pushNoti is a school's call).
      const since = await onTheirWaySince(db, store.dialect);
      if (since === null) return 0;
      let due = db
        .updateTable('deliveries')
        .set({ status: to('due-now'), next_attempt_at: now, updated_at: now })
        .where('status', 'in', from('due-now'))
        .where('kind', '=', 'push');
      if (since !== undefined) due = due.where('created_at', '>=', since);
      const result = await due.executeTakeFirst();
      return Number(result.numUpdatedRows);
    },

    /** `resend` of one dead delivery that can be sent again; false when it is not such a one. */
    async resend(id: number, now: number): Promise<boolean> {
      return (await resend(now, (eb) => eb('id', '=', id))) === 1;
    },

    /** `resend` of every dead delivery that can be sent again. Returns how many. */
    resendAllDead(now: number): Promise<number> {
      return resend(now, (eb) => eb.lit(true));
    },

    /**
     * The text to send of a claimed SMS, opened from its sealed `secret`; throws SealedValueError
     * when it does not open (another key), and answers '' when it is gone (settled).
     */
    openText(row: Pick<DeliveryRow, 'secret' | 'idempotency_key'>): string {
      return row.secret === null ? '' : sealer.open(row.secret, row.idempotency_key);
    },

    /**
     * Seals the clear text of SMS queued by a release that kept it in the `payload` column; runs at
     * start. Returns how many.
     */
    async sealLegacyTexts(): Promise<number> {
      // Unsettled SMS only: a settled one already kept just its masked text.
      const rows = await db
        .selectFrom('deliveries')
        .select(['id', 'status', 'payload', 'idempotency_key'])
        .where('kind', '=', 'sms')
        .where('status', 'in', UNSETTLED_SMS)
        .where('secret', 'is', null)
        .execute();
      let sealed = 0;
      for (const row of rows) {
        const clear = unsealedText(row);
        if (clear?.text === undefined) continue;
        await db
          .updateTable('deliveries')
          .set({ secret: sealer.seal(clear.text, row.idempotency_key), payload: clear.payload })
          .where('id', '=', row.id)
          .where('secret', 'is', null)
          .execute();
        sealed++;
      }
      return sealed;
    },
  };

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
}

export type OutboxSql = ReturnType<typeof createOutboxSql>;

/**
 * `finish` on PostgreSQL: the two updates of SQLite's, with the same conditions, for a whole batch
 * each (UPDATE … FROM a VALUES list), in one statement.
 */
/** How far apart two instances' clocks may be for the bounds on an attempt's start still to hold. */
const CLOCK_SLACK_MS = 10 * 60_000;

async function finishOnPostgres(trx: Transaction<Database>, ended: readonly Ended[]): Promise<void> {
  const attempts = sql.join(
    ended.map(
      ({ attempt: a }) =>
        sql`(${a.id}::bigint, ${a.finished_at}::bigint, ${a.outcome}::text, ${a.status}::integer, ${a.error}::text, ${a.response}::text, ${a.retry_after_ms}::integer)`,
    ),
  );
  const settling = ended.flatMap(({ delivery: d }) =>
    d === null
      ? []
      : [
          sql`(${d.id}::bigint, ${d.attempts}::integer, ${d.status}::text, ${d.next_attempt_at}::bigint, ${d.provider}::text, ${d.provider_id}::text, ${d.last_error}::text, ${d.sent_at}::bigint, ${d.secret}::text, ${d.updated_at}::bigint, ${d.unsure_provider}::text)`,
        ],
  );
  // The rows' time bounds: the planner then reads only the partitions they are in (store/partitions.ts).
  let queuedFrom = Number.POSITIVE_INFINITY;
  let queuedTo = Number.NEGATIVE_INFINITY;
  let finishedTo = Number.NEGATIVE_INFINITY;
  for (const e of ended) {
    queuedFrom = Math.min(queuedFrom, e.queuedAt);
    queuedTo = Math.max(queuedTo, e.queuedAt);
    finishedTo = Math.max(finishedTo, e.attempt.finished_at);
  }
  const attemptUpdate = sql`UPDATE delivery_attempts AS a SET finished_at = v.finished_at,
      outcome = v.outcome, status = v.status, error = v.error, response = v.response,
      retry_after_ms = v.retry_after_ms
    FROM (VALUES ${attempts}) AS v(id, finished_at, outcome, status, error, response, retry_after_ms)
    WHERE a.id = v.id AND a.outcome IS NULL
      AND a.started_at >= ${queuedFrom - CLOCK_SLACK_MS}::bigint
      AND a.started_at <= ${finishedTo + CLOCK_SLACK_MS}::bigint`;
  // Attempts alone (a hedged code's other attempt): nothing of their deliveries changes.
  if (settling.length === 0) {
    await attemptUpdate.execute(trx);
    return;
  }
  // One statement, one round trip: the attempts' update runs as a data-modifying CTE.
  await sql`WITH attempt AS (${attemptUpdate})
    UPDATE deliveries AS d SET status = v.status, lease_until = NULL, leased_by = NULL,
      next_attempt_at = v.next_attempt_at, provider = v.provider, provider_id = v.provider_id,
      last_error = v.last_error, sent_at = v.sent_at, secret = v.secret, updated_at = v.updated_at,
      unsure_provider = COALESCE(d.unsure_provider, v.unsure_provider)
    FROM (VALUES ${sql.join(settling)})
      AS v(id, attempts, status, next_attempt_at, provider, provider_id, last_error, sent_at, secret, updated_at, unsure_provider)
    WHERE d.id = v.id AND d.status = 'sending' AND d.attempts = v.attempts
      AND d.created_at >= ${queuedFrom}::bigint AND d.created_at <= ${queuedTo}::bigint`.execute(trx);
}

/**
 * `finish` on SQLite: the same two updates, prepared once, the whole batch in one synchronous
 * transaction (the query builder's cost per row was most of the dispatcher's time under load).
 */
function sqliteFinisher(sqlite: SQLite.Database): (tx: SqliteTx, ended: readonly Ended[]) => void {
  const attempt = sqlite.prepare(`UPDATE delivery_attempts SET finished_at = @finished_at,
      outcome = @outcome, status = @status, error = @error, response = @response,
      retry_after_ms = @retry_after_ms
    WHERE id = @id AND outcome IS NULL`);
  const settle = sqlite.prepare(`UPDATE deliveries SET status = @status, lease_until = NULL,
      leased_by = NULL, next_attempt_at = @next_attempt_at, provider = @provider,
      provider_id = @provider_id, last_error = @last_error, sent_at = @sent_at, secret = @secret,
      updated_at = @updated_at, unsure_provider = COALESCE(unsure_provider, @unsure_provider)
    WHERE id = @id AND status = 'sending' AND attempts = @attempts`);
  return function settleAttempts(_tx, ended) {
    for (const e of ended) {
      attempt.run(e.attempt);
      if (e.delivery !== null) settle.run(e.delivery);
    }
  };
}
