import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { DELIVERY_STATUSES, type DeliveryState, LOG_PROVIDER } from '@school/contract';
import type SQLite from 'better-sqlite3';
import { type ExpressionBuilder, type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { Sealer } from '../secrets/sealer.js';
import {
  applyDeliveryFilters,
  type DeliveryCursor,
  type DeliveryQuery,
  olderThan,
} from './delivery-filters.js';
import type { DialectPieces } from './dialect.js';
import type {
  AttemptOutcome,
  Database,
  DeliveriesTable,
  DeliveryAttemptsTable,
  DeliveryKind,
  DeliveryStatus,
} from './schema.js';

export type DeliveryRow = Selectable<DeliveriesTable>;
export type AttemptRow = Selectable<DeliveryAttemptsTable>;

/** What an SMS delivery carries. */
export interface SmsPayload {
  /** The text with the auth code masked: what the console shows and what the `payload` column keeps. */
  readonly maskedText: string;
}

/**
 * What an operation queues for an SMS: the masked text, and the text to send, which holds the
 * auth code in clear. That text is stored only sealed (the `secret` column, secrets/sealer.ts) and
 * destroyed when the delivery settles.
 */
export interface NewSmsPayload extends SmsPayload {
  readonly text: string;
}

/** What a push delivery carries. */
export interface PushPayload {
  readonly title: string;
  readonly body: string;
  /** String values only (FCM's rule). */
  readonly data: Readonly<Record<string, string>>;
}

/** The payload of each kind of delivery (one entry per DELIVERY_KINDS), as stored. */
export interface PayloadOfKind {
  readonly sms: SmsPayload;
  readonly push: PushPayload;
}

/** The payload of each kind of delivery as an operation queues it. */
export interface NewPayloadOfKind {
  readonly sms: NewSmsPayload;
  readonly push: PushPayload;
}

/** A delivery's payload, told apart by the delivery's kind. */
export type DeliveryPayload = { [K in DeliveryKind]: { readonly kind: K } & PayloadOfKind[K] }[DeliveryKind];

/**
 * The payload stored in a row's `payload` column. The column holds the JSON of the payload
 * without its kind (the row has its own `kind` column): {maskedText} for SMS, {title, body, data}
 * for pushes. An SMS's own text is never in it: it is sealed in the `secret` column.
 */
export function parseDeliveryPayload(row: Pick<DeliveryRow, 'kind' | 'payload'>): DeliveryPayload {
  const json = JSON.parse(row.payload) as Record<string, unknown>;
  const text = (value: unknown): string => String(value ?? '');
  if (row.kind === 'sms') return { kind: 'sms', maskedText: text(json.maskedText) };
  return {
    kind: 'push',
    title: text(json.title),
    body: text(json.body),
    data: (json.data ?? {}) as Record<string, string>,
  };
}

/** The `payload` column for a payload (see parseDeliveryPayload): an SMS's clear text never. */
export function deliveryPayloadJson(payload: DeliveryPayload): string {
  return payload.kind === 'sms'
    ? JSON.stringify({ maskedText: payload.maskedText })
    : JSON.stringify({ title: payload.title, body: payload.body, data: payload.data });
}

/** A delivery an operation queues; stored with its call, in the same transaction. */
export type NewDelivery = {
  [K in DeliveryKind]: {
    readonly kind: K;
    readonly provider: string;
    readonly recipient: string;
    readonly payload: NewPayloadOfKind[K];
    /** Auth codes: not sent after this (epoch ms). */
    readonly expiresAt?: number;
  };
}[DeliveryKind];

/** A delivery claimed for one attempt. */
export interface Claimed {
  readonly delivery: DeliveryRow;
  readonly attemptId: number;
}

/**
 * The dispatcher's side of a hand-off (SQLite): a delivery queued while its lane has a free slot
 * is claimed in the very transaction that records its call (status `sending`, its attempt row
 * written), and handed to the dispatcher once that commit is durable, so it never waits for a
 * claim pass. Without a hand-off, or without room, it is queued `pending` and claimed as before.
 */
export interface Handoff {
  /** Takes a slot for one delivery of `kind` (false: no room, leave it pending). */
  reserve(kind: DeliveryKind, now: number): boolean;
  /** Gives back slots taken for a commit that failed. */
  release(kind: DeliveryKind, count: number): void;
  /** The deliveries claimed in a commit, once it is committed. */
  take(claimed: readonly Claimed[]): void;
  /** How long a claim's lease lasts (ms). */
  readonly leaseMs: number;
}

/** How an attempt ended, and what becomes of the delivery. */
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
    };

export type { DeliveryCursor, DeliveryQuery };

/** The outbox at a glance (for /metrics and the Service page). */
export interface OutboxState {
  readonly byStatus: Record<DeliveryStatus, number>;
  /** Pending and due now. */
  readonly due: number;
  /** When the longest-waiting due delivery became due (epoch ms); null when none is due. */
  readonly oldestDueAt: number | null;
}

export interface DeliveryRepository {
  /** Tells this instance's dispatcher there is new work (after a commit that queued some). */
  notify(): void;
  /** The dispatcher taking deliveries straight from the call recorder's commits (SQLite only). */
  handoff: Handoff | undefined;
  readonly events: EventEmitter<{ queued: [] }>;
  /**
   * Claims up to `limit` due deliveries for an attempt each: status `sending` until `leaseUntil`,
   * attempts + 1, and an attempt row written before the provider is called, all committed at once.
   * On PostgreSQL rows another instance is claiming are skipped (`FOR UPDATE SKIP LOCKED`), so
   * several dispatchers never claim the same delivery.
   */
  claimDue(now: number, limit: number, leaseUntil: number, kind?: DeliveryKind): Promise<Claimed[]>;
  /**
   * Records how attempts ended and settles or reschedules their deliveries, in one commit. A
   * delivery is settled only while this claim still holds it (same `attempts`, still `sending`):
   * if its lease ran out and another instance took it over, the attempt is recorded and the
   * delivery is left to the newer claim.
   */
  finishAttempts(
    finished: readonly { claimed: Claimed; now: number; result: AttemptResult }[],
  ): Promise<void>;
  /**
   * Deliveries left `sending` by a process that stopped mid-attempt (or whose lease ran out):
   * their attempt is marked `interrupted` and they are due again (with the same idempotency key).
   * `ignoreLeases` (SQLite at start, when this process owns the database alone) takes every one;
   * `except` names deliveries the caller still holds (an attempt under way or not yet recorded).
   * Returns how many.
   */
  recoverInterrupted(
    now: number,
    options?: { ignoreLeases?: boolean; except?: ReadonlySet<number> },
  ): Promise<number>;
  /**
   * Auth codes past their validity become `expired`. (A claim never takes one that is past it, so
   * this sweep only has to run now and then.) Returns how many.
   */
  expireStale(now: number): Promise<number>;
  /** Makes every pending push due now (pushNoti). Returns how many. */
  makePushesDue(now: number): Promise<number>;
  /** How many pushes are pending (what pushNoti will dispatch). */
  pendingPushes(): Promise<number>;
  /** A dead delivery back to pending with fresh attempts; false when it is not dead. */
  retry(id: number, now: number): Promise<boolean>;
  /** Every dead delivery that can be sent again (see resendable) back to pending. Returns how many. */
  retryAllDead(now: number): Promise<number>;
  findById(id: number): Promise<DeliveryRow | undefined>;
  /**
   * When the newest `limit` SMS to recipients matching `recipient` (exact, or a `+44` prefix
   * with `prefix`) since `since` were queued, newest first.
   */
  recentSms(recipient: string, since: number, limit: number, prefix?: boolean): Promise<number[]>;
  /** Records what the provider reported later about the message it accepted; false if unknown. */
  recordProviderStatus(providerId: string, status: string, now: number): Promise<boolean>;
  attemptsOf(id: number): Promise<AttemptRow[]>;
  /**
   * The text to send of a claimed SMS, opened from its sealed `secret`; throws SealedValueError
   * when it does not open (another key), and answers '' when it is gone (settled).
   */
  openText(row: Pick<DeliveryRow, 'secret' | 'idempotency_key'>): string;
  /**
   * Seals the clear text of SMS queued by a release that kept it in the `payload` column; runs at
   * start. Returns how many.
   */
  sealLegacyTexts(): Promise<number>;
  /** Newest first by (created_at, id), after the cursor `after`. */
  search(
    query: DeliveryQuery,
    page: { limit: number; after?: DeliveryCursor | undefined },
  ): Promise<DeliveryRow[]>;
  counts(): Promise<Record<DeliveryStatus, number>>;
  /** As the API counts them: `sent` without the `log` provider's, which are `logged` (one snapshot). */
  stateCounts(): Promise<Record<DeliveryState, number>>;
  outbox(now: number): Promise<OutboxState>;
}

/**
 * Once sent or expired, an SMS keeps only its masked text: its sealed text (`secret`) is
 * destroyed. A dead SMS keeps it while its code is valid, so staff can retry it; the expiry sweep
 * destroys it then.
 */
const SETTLED: readonly DeliveryStatus[] = ['sent', 'expired'];

/** The stored payload of a delivery to be queued, with its kind: an SMS's masked text alone. */
const payloadOf = (item: NewDelivery): DeliveryPayload =>
  item.kind === 'sms'
    ? { kind: 'sms', maskedText: item.payload.maskedText }
    : { kind: 'push', ...item.payload };

/**
 * A new delivery's idempotency key: a UUID of version 7 (RFC 9562), the time in milliseconds and
 * then 74 random bits. As unique as a random UUID for the providers' deduplication, and ordered by
 * time, so each new key goes at the end of the unique index rather than on a random page of it:
 * with random keys every delivery dirtied a page of that index of its own, which each commit then
 * wrote (bench/commit-batch.mjs: SQLite's work per call about halves).
 */
export function idempotencyKey(now: number): string {
  const time = (Math.max(0, Math.floor(now)) % 2 ** 48).toString(16).padStart(12, '0');
  // A random UUID (version 4) with its first 48 bits replaced by the time and its version digit by
  // 7: its other 74 random bits stay. randomUUID draws from a pool it refills once per 128 UUIDs;
  // randomBytes per key went to the system's generator every time (5 % of a busy server's CPU).
  return `${time.slice(0, 8)}-${time.slice(8)}-7${randomUUID().slice(15)}`;
}

/**
 * The rows a call's deliveries are inserted as (in the call's transaction, by the call recorder):
 * an SMS's text sealed for its idempotency key.
 */
export function newDeliveryRows(callId: number, items: readonly NewDelivery[], now: number, sealer: Sealer) {
  return items.map((item) => {
    const key = idempotencyKey(now);
    return {
      call_id: callId,
      kind: item.kind,
      provider: item.provider,
      recipient: item.recipient,
      payload: deliveryPayloadJson(payloadOf(item)),
      secret: item.kind === 'sms' ? sealer.seal(item.payload.text, key) : null,
      status: 'pending' as const,
      attempts: 0,
      next_attempt_at: now,
      lease_until: null,
      expires_at: item.expiresAt ?? null,
      idempotency_key: key,
      created_at: now,
      updated_at: now,
    };
  });
}

type Ended = {
  readonly attempt: {
    id: number;
    finished_at: number;
    outcome: string;
    status: number | null;
    error: string | null;
    response: string | null;
    retry_after_ms: number | null;
  };
  readonly delivery: {
    id: number;
    attempts: number;
    status: DeliveryStatus;
    next_attempt_at: number;
    provider_id: string | null;
    last_error: string | null;
    sent_at: number | null;
    secret: string | null;
    updated_at: number;
  };
};

/**
 * finishAttempts on PostgreSQL: the same two updates as on SQLite, with the same conditions, for
 * a whole batch each (UPDATE … FROM a VALUES list).
 */
async function finishOnPostgres(trx: Transaction<Database>, ended: readonly Ended[]): Promise<void> {
  const attempts = sql.join(
    ended.map(
      ({ attempt: a }) =>
        sql`(${a.id}::bigint, ${a.finished_at}::bigint, ${a.outcome}::text, ${a.status}::integer, ${a.error}::text, ${a.response}::text, ${a.retry_after_ms}::integer)`,
    ),
  );
  await sql`UPDATE delivery_attempts AS a SET finished_at = v.finished_at, outcome = v.outcome,
      status = v.status, error = v.error, response = v.response, retry_after_ms = v.retry_after_ms
    FROM (VALUES ${attempts}) AS v(id, finished_at, outcome, status, error, response, retry_after_ms)
    WHERE a.id = v.id AND a.outcome IS NULL`.execute(trx);
  const deliveries = sql.join(
    ended.map(
      ({ delivery: d }) =>
        sql`(${d.id}::bigint, ${d.attempts}::integer, ${d.status}::text, ${d.next_attempt_at}::bigint, ${d.provider_id}::text, ${d.last_error}::text, ${d.sent_at}::bigint, ${d.secret}::text, ${d.updated_at}::bigint)`,
    ),
  );
  await sql`UPDATE deliveries AS d SET status = v.status, lease_until = NULL,
      next_attempt_at = v.next_attempt_at, provider_id = v.provider_id, last_error = v.last_error,
      sent_at = v.sent_at, secret = v.secret, updated_at = v.updated_at
    FROM (VALUES ${deliveries})
      AS v(id, attempts, status, next_attempt_at, provider_id, last_error, sent_at, secret, updated_at)
    WHERE d.id = v.id AND d.status = 'sending' AND d.attempts = v.attempts`.execute(trx);
}

/**
 * finishAttempts on SQLite: the same two updates, prepared once, the whole batch one synchronous
 * transaction (the query builder's cost per row was most of the dispatcher's time under load).
 */
function sqliteFinisher(sqlite: SQLite.Database): (ended: readonly Ended[]) => void {
  const attempt = sqlite.prepare(`UPDATE delivery_attempts SET finished_at = @finished_at,
      outcome = @outcome, status = @status, error = @error, response = @response,
      retry_after_ms = @retry_after_ms
    WHERE id = @id AND outcome IS NULL`);
  const settle = sqlite.prepare(`UPDATE deliveries SET status = @status, lease_until = NULL,
      next_attempt_at = @next_attempt_at, provider_id = @provider_id, last_error = @last_error,
      sent_at = @sent_at, secret = @secret, updated_at = @updated_at
    WHERE id = @id AND status = 'sending' AND attempts = @attempts`);
  return sqlite.transaction((ended: readonly Ended[]) => {
    for (const e of ended) {
      attempt.run(e.attempt);
      settle.run(e.delivery);
    }
  });
}

const INTERRUPTED = 'The server stopped during this attempt; it is retried with the same idempotency key.';
const EXPIRED = 'Not sent within its validity; an auth code is never sent late.';

/** The outbox, one implementation for both databases (the differences are in dialect.ts). */
export function createDeliveryRepository(
  db: Kysely<Database>,
  dialect: DialectPieces,
  sealer: Sealer,
  sqlite?: SQLite.Database,
): DeliveryRepository {
  const events = new EventEmitter<{ queued: [] }>();
  const pg = dialect.name === 'postgres';
  const finishOnSqlite = sqlite ? sqliteFinisher(sqlite) : undefined;
  /**
   * A dead delivery that can be sent again: a push, or an SMS that still has its text. A settled
   * SMS keeps only its masked text (the auth code is gone), so it could only be sent empty.
   */
  const resendable = (eb: ExpressionBuilder<Database, 'deliveries'>) =>
    eb.or([eb('kind', '=', 'push'), eb('secret', 'is not', null)]);

  /** Locks the rows a sweep or claim selects, skipping those another transaction holds (PostgreSQL). */
  const skipLocked = <Q extends { forUpdate(): Q; skipLocked(): Q }>(qb: Q): Q =>
    pg ? qb.forUpdate().skipLocked() : qb;

  return {
    events,
    handoff: undefined,
    notify() {
      events.emit('queued');
    },
    async claimDue(now, limit, leaseUntil, kind) {
      if (limit <= 0) return [];
      return dialect.outboxTransaction(async (trx) => {
        let pending = trx.selectFrom('deliveries').select('id').where('status', '=', 'pending');
        if (kind) pending = pending.where('kind', '=', kind);
        const due = skipLocked(
          pending
            .where('next_attempt_at', '<=', now)
            .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
            .orderBy('next_attempt_at')
            .orderBy('id')
            .limit(limit),
        );
        const rows = await trx
          .updateTable('deliveries')
          .set((eb) => ({
            status: 'sending',
            attempts: eb('attempts', '+', 1),
            lease_until: leaseUntil,
            updated_at: now,
          }))
          .where('id', 'in', due)
          .returningAll()
          .execute();
        if (rows.length === 0) return [];
        const attempts = await trx
          .insertInto('delivery_attempts')
          .values(rows.map((r) => ({ delivery_id: r.id, started_at: now })))
          .returning(['id', 'delivery_id'])
          .execute();
        const attemptOf = new Map(attempts.map((a) => [a.delivery_id, a.id]));
        return rows
          .sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.id - b.id)
          .map((delivery) => ({ delivery, attemptId: attemptOf.get(delivery.id) as number }));
      });
    },
    async finishAttempts(finished) {
      if (finished.length === 0) return;
      const ended = finished.map(({ claimed, now, result }) => {
        const { delivery, attemptId } = claimed;
        const sent = result.outcome === 'sent';
        const status: DeliveryStatus = sent ? 'sent' : result.retryAt === undefined ? 'dead' : 'pending';
        return {
          attempt: {
            id: attemptId,
            finished_at: now,
            outcome: result.outcome,
            status: sent ? null : (result.status ?? null),
            error: sent ? null : result.error,
            response: result.response ?? null,
            retry_after_ms: sent ? null : (result.retryAfterMs ?? null),
          },
          delivery: {
            id: delivery.id,
            attempts: delivery.attempts,
            status,
            next_attempt_at: sent || result.retryAt === undefined ? now : result.retryAt,
            provider_id: sent ? (result.providerId ?? null) : delivery.provider_id,
            last_error: sent ? null : result.error,
            sent_at: sent ? now : null,
            secret: SETTLED.includes(status) ? null : delivery.secret,
            updated_at: now,
          },
        };
      });
      if (finishOnSqlite) {
        await dialect.outboxSync(() => finishOnSqlite(ended));
        return;
      }
      // A round trip per statement is what costs on PostgreSQL: each batch is two statements.
      await dialect.outboxTransaction(async (trx) => {
        for (let i = 0; i < ended.length; i += 500) await finishOnPostgres(trx, ended.slice(i, i + 500));
      });
    },
    recoverInterrupted(now, options = {}) {
      return dialect.outboxTransaction(async (trx) => {
        let stuck = trx.selectFrom('deliveries').select('id').where('status', '=', 'sending');
        if (!options.ignoreLeases) stuck = stuck.where('lease_until', '<', now);
        const except = options.except;
        const ids = (await skipLocked(stuck).execute()).map((r) => r.id).filter((id) => !except?.has(id));
        if (ids.length === 0) return 0;
        for (let i = 0; i < ids.length; i += 1000) {
          const chunk = ids.slice(i, i + 1000);
          await trx
            .updateTable('delivery_attempts')
            .set({ outcome: 'interrupted', finished_at: now, error: INTERRUPTED })
            .where('delivery_id', 'in', chunk)
            .where('outcome', 'is', null)
            .execute();
          await trx
            .updateTable('deliveries')
            .set({ status: 'pending', lease_until: null, next_attempt_at: now, updated_at: now })
            .where('id', 'in', chunk)
            .execute();
        }
        return ids.length;
      });
    },
    expireStale(now) {
      return dialect.outboxTransaction(async (trx) => {
        const stale = await skipLocked(
          trx
            .selectFrom('deliveries')
            .select(['id', 'status'])
            .where('expires_at', 'is not', null)
            .where('expires_at', '<=', now)
            .where((eb) =>
              eb.or([
                eb('status', '=', 'pending'),
                eb.and([eb('status', '=', 'dead'), eb('secret', 'is not', null)]),
              ]),
            ),
        ).execute();
        const dead = stale.filter((r) => r.status === 'dead').map((r) => r.id);
        const pending = stale.filter((r) => r.status !== 'dead').map((r) => r.id);
        for (let i = 0; i < dead.length; i += 1000) {
          // Past its validity a dead code cannot be retried: its sealed text goes, the status stays.
          await trx
            .updateTable('deliveries')
            .set({ secret: null, updated_at: now })
            .where('id', 'in', dead.slice(i, i + 1000))
            .execute();
        }
        for (let i = 0; i < pending.length; i += 1000) {
          await trx
            .updateTable('deliveries')
            .set({ status: 'expired', secret: null, last_error: EXPIRED, updated_at: now })
            .where('id', 'in', pending.slice(i, i + 1000))
            .execute();
        }
        return pending.length;
      });
    },
    async pendingPushes() {
      const row = await db
        .selectFrom('deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'pending')
        .where('kind', '=', 'push')
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    async makePushesDue(now) {
      const result = await db
        .updateTable('deliveries')
        .set({ next_attempt_at: now, updated_at: now })
        .where('status', '=', 'pending')
        .where('kind', '=', 'push')
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
    async retry(id, now) {
      const result = await db
        .updateTable('deliveries')
        .set({ status: 'pending', attempts: 0, next_attempt_at: now, updated_at: now })
        .where('id', '=', id)
        .where('status', '=', 'dead')
        .where(resendable)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    async retryAllDead(now) {
      const result = await db
        .updateTable('deliveries')
        .set({ status: 'pending', attempts: 0, next_attempt_at: now, updated_at: now })
        .where('status', '=', 'dead')
        .where(resendable)
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
    async recentSms(recipient, since, limit, prefix = false) {
      const rows = await db
        .selectFrom('deliveries')
        .select('created_at')
        .where('kind', '=', 'sms')
        .where('recipient', prefix ? 'like' : '=', prefix ? `${recipient}%` : recipient)
        .where('created_at', '>=', since)
        .orderBy('created_at', 'desc')
        .limit(limit)
        .execute();
      return rows.map((r) => Number(r.created_at));
    },
    async recordProviderStatus(providerId, status, now) {
      const result = await db
        .updateTable('deliveries')
        .set({ provider_status: status, updated_at: now })
        .where('provider_id', '=', providerId)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },
    findById(id) {
      return db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirst();
    },
    openText(row) {
      return row.secret === null ? '' : sealer.open(row.secret, row.idempotency_key);
    },
    async sealLegacyTexts() {
      // Unsettled SMS only: a settled one already kept just its masked text.
      const rows = await db
        .selectFrom('deliveries')
        .select(['id', 'payload', 'idempotency_key'])
        .where('kind', '=', 'sms')
        .where('status', 'in', ['pending', 'sending', 'dead'])
        .where('secret', 'is', null)
        .execute();
      let sealed = 0;
      for (const row of rows) {
        const json = JSON.parse(row.payload) as { text?: unknown; maskedText?: unknown };
        if (typeof json.text !== 'string') continue;
        await db
          .updateTable('deliveries')
          .set({
            secret: sealer.seal(json.text, row.idempotency_key),
            payload: deliveryPayloadJson({ kind: 'sms', maskedText: String(json.maskedText ?? '') }),
          })
          .where('id', '=', row.id)
          .where('secret', 'is', null)
          .execute();
        sealed++;
      }
      return sealed;
    },
    attemptsOf(id) {
      return db
        .selectFrom('delivery_attempts')
        .selectAll()
        .where('delivery_id', '=', id)
        .orderBy('id')
        .execute();
    },
    search(query, page) {
      let qb = applyDeliveryFilters(db.selectFrom('deliveries').selectAll(), query, dialect.name);
      if (page.after) qb = qb.where(olderThan(page.after));
      return qb.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).execute();
    },
    counts,
    async stateCounts() {
      // One statement, so `logged` and `sent` come from the same snapshot. The provider is a
      // literal: the partial index of the `log` provider's deliveries (0010) counts them.
      const rows = await db
        .selectFrom('deliveries')
        .select((eb) => [sql<string>`status`.as('state'), eb.fn.countAll<number>().as('n')])
        .groupBy('status')
        .unionAll(
          db
            .selectFrom('deliveries')
            .select((eb) => [sql<string>`'logged'`.as('state'), eb.fn.countAll<number>().as('n')])
            .where('status', '=', 'sent')
            .where('provider', '=', sql.lit(LOG_PROVIDER)),
        )
        .execute();
      const byState = Object.fromEntries([...DELIVERY_STATUSES, 'logged'].map((s) => [s, 0])) as Record<
        DeliveryState,
        number
      >;
      for (const r of rows) byState[r.state as DeliveryState] = Number(r.n);
      byState.sent -= byState.logged;
      return byState;
    },
    async outbox(now) {
      const [byStatus, due] = await Promise.all([
        counts(),
        db
          .selectFrom('deliveries')
          .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('next_attempt_at').as('oldest')])
          .where('status', '=', 'pending')
          .where('next_attempt_at', '<=', now)
          .executeTakeFirstOrThrow(),
      ]);
      return {
        byStatus,
        due: Number(due.n),
        oldestDueAt: due.oldest === null || due.oldest === undefined ? null : Number(due.oldest),
      };
    },
  };

  async function counts(): Promise<Record<DeliveryStatus, number>> {
    const rows = await db
      .selectFrom('deliveries')
      .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    const byStatus = Object.fromEntries(DELIVERY_STATUSES.map((s) => [s, 0])) as Record<
      DeliveryStatus,
      number
    >;
    for (const r of rows) byStatus[r.status] = Number(r.n);
    return byStatus;
  }
}

export type { AttemptOutcome, DeliveryKind, DeliveryStatus };
