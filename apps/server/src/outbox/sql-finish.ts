import type SQLite from 'better-sqlite3';
import { CompiledQuery } from 'kysely';
import { jsonParameter, preparedText, type SqliteTx, type StatementPart } from '../store/index.js';
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
 * rescheduled, in a commit of their own (`finish`) or the caller's (`finishIn` on SQLite,
 * `finishPart` in the recorder's statement on PostgreSQL).
 */
export function finishSql({ store, work }: OutboxSqlContext) {
  const finishOnSqlite = store.sqlite ? sqliteFinisher(store.sqlite) : undefined;
  const { ctes } = finishPart(1);
  /** PostgreSQL: the part alone, one statement and its own transaction. */
  const alone = preparedText('outbox_finish', `WITH ${ctes} SELECT 1 AS finished`);
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
      if (finishOnSqlite) {
        const ended = finished.map(endedOf);
        await work.relaxedSync((tx) => finishOnSqlite(tx, ended));
        return;
      }
      // Bookkeeping (a `relaxed` commit's): one statement is its own transaction, one round trip.
      await store.db.executeQuery(CompiledQuery.raw(alone, finishValues(finished)));
    },

    /**
     * `finish` inside the caller's synchronous transaction (a call's durable commit on SQLite,
     * enqueue.ts): the finished attempts are recorded in it instead of a commit of their own.
     */
    finishIn(tx: SqliteTx, finished: readonly Finished[]): void {
      if (!finishOnSqlite) throw new Error('finishIn: not a SQLite store');
      finishOnSqlite(tx, finished.map(endedOf));
    },
  };
}

/** How far apart two instances' clocks may be for the bounds on an attempt's start still to hold. */
const CLOCK_SLACK_MS = 10 * 60_000;

/**
 * PostgreSQL: `finish` as a part of one statement (store's statement-parts.ts): SQLite's two
 * updates with the same conditions, each for a whole batch (UPDATE … FROM the batch's rows, a JSON
 * array each), as data-modifying expressions, which run whether or not anything refers to them.
 * In the call recorder's statement (enqueue.ts), and alone (`finish`). Its parameters, from
 * `first`: finishValues'.
 *
 * Its plan is made once per connection (the whole statement is prepared, store/prepared.ts),
 * perhaps while the tables are still small, and kept while they grow: each update finds its rows
 * by their ids in the primary key (`id = ANY`), a plan that stays right at any size, where a join
 * on the ids could be planned as a scan of the whole partition and stay so. Two things keep
 * PostgreSQL on that one plan rather than planning every batch anew with its values (which looks
 * cheaper to it whenever the values let it leave partitions out as it plans): the ids are read
 * through a sub-select, `(SELECT $n)`, which the planner cannot see into; the rows' time bounds
 * through `atStart`, a stable expression, with which it leaves out the partitions they are not in
 * (store/partitions.ts) as each execution starts, but cannot plan.
 */
export function finishPart(first: number): StatementPart {
  const $ = (i: number) => `$${first + i}`;
  const ids = (i: number) => `(SELECT ${$(i)}::bigint[])::bigint[]`;
  const atStart = (i: number) => `CASE WHEN now() IS NOT NULL THEN ${$(i)}::bigint END`;
  return {
    ctes: `outbox_finished AS (
        UPDATE delivery_attempts AS a SET finished_at = v.finished_at, outcome = v.outcome,
          status = v.status, error = v.error, response = v.response, retry_after_ms = v.retry_after_ms
        FROM json_populate_recordset(NULL::delivery_attempts, ${$(0)}::json) AS v
        WHERE a.id = ANY (${ids(2)}) AND a.id = v.id AND a.outcome IS NULL
          AND a.started_at >= ${atStart(4)} AND a.started_at <= ${atStart(5)}),
      outbox_settled AS (
        UPDATE deliveries AS d SET status = v.status, lease_until = NULL, leased_by = NULL,
          next_attempt_at = v.next_attempt_at, provider = v.provider, provider_id = v.provider_id,
          last_error = v.last_error, sent_at = v.sent_at, secret = v.secret, updated_at = v.updated_at,
          unsure_provider = COALESCE(d.unsure_provider, v.unsure_provider)
        FROM json_populate_recordset(NULL::deliveries, ${$(1)}::json) AS v
        WHERE d.id = ANY (${ids(3)}) AND d.id = v.id AND d.created_at = v.created_at
          AND d.status = 'sending' AND d.attempts = v.attempts
          AND d.created_at >= ${atStart(6)} AND d.created_at <= ${atStart(7)})`,
    columns: '',
    parameters: 8,
  };
}

/**
 * The bounds when there is nothing to record: all time. Bounds that left out every partition would
 * make a plan made with the values look cheap (the planner estimates with them, stable or not), and
 * keep it planning anew; with no ids, nothing is read all the same.
 */
const NO_BOUNDS = [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER] as const;

/** The values of finishPart's parameters for a batch of finished attempts (none: nothing changes). */
export function finishValues(finished: readonly Finished[]): unknown[] {
  const attempts: Ended['attempt'][] = [];
  const settling: (NonNullable<Ended['delivery']> & { created_at: number })[] = [];
  let queuedFrom = Number.POSITIVE_INFINITY;
  let queuedTo = Number.NEGATIVE_INFINITY;
  let finishedTo = Number.NEGATIVE_INFINITY;
  for (const f of finished) {
    const e = endedOf(f);
    attempts.push(e.attempt);
    // Null: the attempt alone (a hedged code's other attempt); nothing of its delivery changes.
    if (e.delivery !== null) settling.push({ ...e.delivery, created_at: e.queuedAt });
    queuedFrom = Math.min(queuedFrom, e.queuedAt);
    queuedTo = Math.max(queuedTo, e.queuedAt);
    finishedTo = Math.max(finishedTo, e.attempt.finished_at);
  }
  if (attempts.length === 0) return ['[]', '[]', [], [], ...NO_BOUNDS, ...NO_BOUNDS];
  return [
    jsonParameter(attempts),
    jsonParameter(settling),
    attempts.map((a) => a.id),
    settling.map((d) => d.id),
    queuedFrom - CLOCK_SLACK_MS,
    finishedTo + CLOCK_SLACK_MS,
    queuedFrom,
    queuedTo,
  ];
}

/**
 * `finish` on SQLite: the same two updates, prepared once, the whole batch in one synchronous
 * transaction (the query builder's cost per row was most of the dispatcher's time under load).
 */
function sqliteFinisher(sqlite: SQLite.Database): (tx: SqliteTx, ended: readonly Ended[]) => void {
  // Bound by position: a lookup by name for each parameter cost more than the update's own work.
  const attempt = sqlite.prepare(`UPDATE delivery_attempts SET finished_at = ?, outcome = ?,
      status = ?, error = ?, response = ?, retry_after_ms = ?
    WHERE id = ? AND outcome IS NULL`);
  const settle = sqlite.prepare(`UPDATE deliveries SET status = ?, lease_until = NULL,
      leased_by = NULL, next_attempt_at = ?, provider = ?, provider_id = ?, last_error = ?,
      sent_at = ?, secret = ?, updated_at = ?, unsure_provider = COALESCE(unsure_provider, ?)
    WHERE id = ? AND status = 'sending' AND attempts = ?`);
  return function settleAttempts(_tx, ended) {
    for (const { attempt: a, delivery: d } of ended) {
      attempt.run(a.finished_at, a.outcome, a.status, a.error, a.response, a.retry_after_ms, a.id);
      if (d !== null)
        settle.run(
          d.status,
          d.next_attempt_at,
          d.provider,
          d.provider_id,
          d.last_error,
          d.sent_at,
          d.secret,
          d.updated_at,
          d.unsure_provider,
          d.id,
          d.attempts,
        );
    }
  };
}
