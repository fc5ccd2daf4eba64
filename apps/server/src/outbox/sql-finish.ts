import type SQLite from 'better-sqlite3';
import { sql, type Transaction } from 'kysely';
import type { Database, PostgresTx, SqliteTx } from '../store/index.js';
import type { DeliveryStatus } from './schema.js';
import type { Claimed } from './sql-claims.js';
import type { OutboxSqlContext } from './sql-context.js';
import { to } from './sql-context.js';
import { isSettled, type OutboxEvent } from './states.js';

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
 * `sent`, `retry` or `fail`: attempts recorded as they ended, their deliveries settled or
 * rescheduled, in a commit of their own (`finish`) or the caller's (`finishIn`).
 */
export function finishSql({ store, work }: OutboxSqlContext) {
  const finishOnSqlite = store.sqlite ? sqliteFinisher(store.sqlite) : undefined;
  return {
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
     * attempts are recorded in it instead of a commit of their own. SQLite: synchronous statements.
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
  };
}

/** How far apart two instances' clocks may be for the bounds on an attempt's start still to hold. */
const CLOCK_SLACK_MS = 10 * 60_000;

/**
 * `finish` on PostgreSQL: the two updates of SQLite's, with the same conditions, for a whole batch
 * each (UPDATE … FROM a VALUES list), in one statement.
 */

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
