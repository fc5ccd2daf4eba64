import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { DELIVERY_STATUSES } from '@school/contract';
import type SQLite from 'better-sqlite3';
import type { Kysely, Selectable } from 'kysely';
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

/**
 * A dead delivery that can be sent again: a push, or an SMS that still has its text. A settled
 * SMS keeps only its masked text (the auth code is gone), so it could only be sent empty.
 */
const RESENDABLE = "(kind = 'push' OR json_extract(payload, '$.text') IS NOT NULL)";

/** What an SMS delivery carries. */
export interface SmsPayload {
  /** The text to send. Absent once the delivery has settled: it holds the auth code in clear. */
  readonly text?: string;
  /** The text with the auth code masked: what the console shows and what is kept. */
  readonly maskedText: string;
}

/** What a push delivery carries. */
export interface PushPayload {
  readonly title: string;
  readonly body: string;
  /** String values only (FCM's rule). */
  readonly data: Readonly<Record<string, string>>;
}

/** The payload of each kind of delivery (one entry per DELIVERY_KINDS). */
export interface PayloadOfKind {
  readonly sms: SmsPayload;
  readonly push: PushPayload;
}

/** A delivery's payload, told apart by the delivery's kind. */
export type DeliveryPayload = { [K in DeliveryKind]: { readonly kind: K } & PayloadOfKind[K] }[DeliveryKind];

/**
 * The payload stored in a row's `payload` column. The column holds the JSON of the payload
 * without its kind (the row has its own `kind` column): {text, maskedText} for SMS ({maskedText}
 * once settled), {title, body, data} for pushes.
 */
export function parseDeliveryPayload(row: Pick<DeliveryRow, 'kind' | 'payload'>): DeliveryPayload {
  const json = JSON.parse(row.payload) as Record<string, unknown>;
  const text = (value: unknown): string => String(value ?? '');
  if (row.kind === 'sms') {
    return json.text === undefined
      ? { kind: 'sms', maskedText: text(json.maskedText) }
      : { kind: 'sms', text: text(json.text), maskedText: text(json.maskedText) };
  }
  return {
    kind: 'push',
    title: text(json.title),
    body: text(json.body),
    data: (json.data ?? {}) as Record<string, string>,
  };
}

/** The `payload` column for a payload (see parseDeliveryPayload). */
export function deliveryPayloadJson(payload: DeliveryPayload): string {
  return payload.kind === 'sms'
    ? JSON.stringify({ text: payload.text, maskedText: payload.maskedText })
    : JSON.stringify({ title: payload.title, body: payload.body, data: payload.data });
}

/** A delivery an operation queues; stored with its call, in the same transaction. */
export type NewDelivery = {
  [K in DeliveryKind]: {
    readonly kind: K;
    readonly provider: string;
    readonly recipient: string;
    readonly payload: PayloadOfKind[K];
    /** Auth codes: not sent after this (epoch ms). */
    readonly expiresAt?: number;
  };
}[DeliveryKind];

/** A delivery claimed for one attempt. */
export interface Claimed {
  readonly delivery: DeliveryRow;
  readonly attemptId: number;
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

export interface DeliveryQuery {
  readonly status?: DeliveryStatus | undefined;
  readonly kind?: DeliveryKind | undefined;
  readonly callId?: number | undefined;
}

export interface DeliveryRepository {
  /** Inserts the deliveries of a call; called inside the call's transaction. */
  insertFor(callId: number, items: readonly NewDelivery[]): void;
  /** Tells the dispatcher there is new work (after a commit). */
  notify(): void;
  readonly events: EventEmitter<{ queued: [] }>;
  /**
   * Claims up to `limit` due deliveries for an attempt each: status `sending` until `leaseUntil`,
   * attempts + 1, and an attempt row written before the provider is called, all committed at once.
   */
  claimDue(now: number, limit: number, leaseUntil: number): Claimed[];
  /** Records how attempts ended and settles or reschedules their deliveries, in one commit. */
  finishAttempts(finished: readonly { claimed: Claimed; now: number; result: AttemptResult }[]): void;
  /**
   * Deliveries left `sending` by a process that stopped mid-attempt: their attempt is marked
   * `interrupted` and they are due again (with the same idempotency key). Returns how many.
   */
  recoverInterrupted(now: number, options?: { ignoreLeases?: boolean }): number;
  /**
   * Auth codes past their validity become `expired`. (A claim never takes one that is past it, so
   * this sweep only has to run now and then.) Returns how many.
   */
  expireStale(now: number): number;
  /** Makes every pending push due now (pushNoti). Returns how many. */
  makePushesDue(now: number): number;
  /** How many pushes are pending (what pushNoti will dispatch). */
  pendingPushes(): number;
  /** A dead delivery back to pending with fresh attempts; false when it is not dead. */
  retry(id: number, now: number): boolean;
  /** Every dead delivery that can be sent again (see RESENDABLE) back to pending. Returns how many. */
  retryAllDead(now: number): number;
  findById(id: number): Promise<DeliveryRow | undefined>;
  /**
   * When the newest `limit` SMS to recipients matching `recipient` (exact, or a `+44` prefix
   * with `prefix`) since `since` were queued, newest first.
   */
  recentSms(recipient: string, since: number, limit: number, prefix?: boolean): Promise<number[]>;
  /** Records what the provider reported later about the message it accepted; false if unknown. */
  recordProviderStatus(providerId: string, status: string, now: number): boolean;
  attemptsOf(id: number): Promise<AttemptRow[]>;
  /** Newest first, after the id `before`. */
  search(query: DeliveryQuery, page: { limit: number; before?: number | undefined }): Promise<DeliveryRow[]>;
  counts(): Promise<Record<DeliveryStatus, number>>;
}

/**
 * Once sent or expired, an SMS payload keeps only the masked text: auth codes are not kept in
 * clear. A dead SMS keeps its text while its code is valid, so staff can retry it; the expiry
 * sweep masks it then.
 */
const SETTLED: readonly DeliveryStatus[] = ['sent', 'expired'];

/** An SMS payload with only its masked text. */
function settledPayload(row: Pick<DeliveryRow, 'kind' | 'payload'>): string {
  if (row.kind !== 'sms') return row.payload;
  const payload = parseDeliveryPayload(row);
  return payload.kind === 'sms'
    ? deliveryPayloadJson({ kind: 'sms', maskedText: payload.maskedText })
    : row.payload;
}

/** The payload of a delivery to be queued, with its kind. */
const payloadOf = (item: NewDelivery): DeliveryPayload =>
  item.kind === 'sms' ? { kind: 'sms', ...item.payload } : { kind: 'push', ...item.payload };

/**
 * The outbox on SQLite. Every write is one synchronous better-sqlite3 transaction, so it can never
 * interleave with the call recorder's group commits on the same connection; reads use Kysely.
 */
export function createDeliveryRepository(db: Kysely<Database>, sqlite: SQLite.Database): DeliveryRepository {
  const events = new EventEmitter<{ queued: [] }>();
  const insert = sqlite.prepare(
    `INSERT INTO deliveries (call_id, kind, provider, recipient, payload, status, attempts, next_attempt_at,
       lease_until, expires_at, idempotency_key, created_at, updated_at)
     VALUES (@call_id, @kind, @provider, @recipient, @payload, 'pending', 0, @now, NULL, @expires_at,
       @idempotency_key, @now, @now)`,
  );
  const claim = sqlite.prepare(
    `UPDATE deliveries SET status = 'sending', attempts = attempts + 1, lease_until = @lease, updated_at = @now
     WHERE id IN (SELECT id FROM deliveries WHERE status = 'pending' AND next_attempt_at <= @now
                  AND (expires_at IS NULL OR expires_at > @now)
                  ORDER BY next_attempt_at, id LIMIT @limit)
     RETURNING *`,
  );
  const startAttempt = sqlite.prepare(
    'INSERT INTO delivery_attempts (delivery_id, started_at) VALUES (?, ?)',
  );
  const endAttempt = sqlite.prepare(
    `UPDATE delivery_attempts SET finished_at = @now, outcome = @outcome, status = @status, error = @error,
       response = @response, retry_after_ms = @retry_after_ms WHERE id = @id`,
  );
  const settle = sqlite.prepare(
    `UPDATE deliveries SET status = @status, lease_until = NULL, next_attempt_at = @next, provider_id = @provider_id,
       last_error = @last_error, sent_at = @sent_at, payload = @payload, updated_at = @now WHERE id = @id`,
  );
  const getPayload = sqlite.prepare('SELECT kind, payload FROM deliveries WHERE id = ?');

  const finish = sqlite.transaction((claimed: Claimed, now: number, result: AttemptResult) => {
    const { delivery, attemptId } = claimed;
    endAttempt.run({
      id: attemptId,
      now,
      outcome: result.outcome,
      status: result.outcome === 'sent' ? null : (result.status ?? null),
      error: result.outcome === 'sent' ? null : result.error,
      response: result.response ?? null,
      retry_after_ms: result.outcome === 'sent' ? null : (result.retryAfterMs ?? null),
    });
    const status: DeliveryStatus =
      result.outcome === 'sent' ? 'sent' : result.retryAt === undefined ? 'dead' : 'pending';
    const row = getPayload.get(delivery.id) as { kind: DeliveryKind; payload: string };
    settle.run({
      id: delivery.id,
      now,
      status,
      next: result.outcome === 'sent' || result.retryAt === undefined ? now : result.retryAt,
      provider_id: result.outcome === 'sent' ? (result.providerId ?? null) : delivery.provider_id,
      last_error: result.outcome === 'sent' ? null : result.error,
      sent_at: result.outcome === 'sent' ? now : null,
      payload: SETTLED.includes(status) ? settledPayload(row) : row.payload,
    });
  });

  const finishAll = sqlite.transaction(
    (finished: readonly { claimed: Claimed; now: number; result: AttemptResult }[]) => {
      for (const f of finished) finish(f.claimed, f.now, f.result);
    },
  );

  const claimAll = sqlite.transaction((now: number, limit: number, lease: number): Claimed[] => {
    const rows = claim.all({ now, limit, lease }) as DeliveryRow[];
    return rows.map((delivery) => ({
      delivery,
      attemptId: Number(startAttempt.run(delivery.id, now).lastInsertRowid),
    }));
  });

  const stuckSending = sqlite.prepare(
    "SELECT id FROM deliveries WHERE status = 'sending' AND (? OR lease_until < ?)",
  );
  const interruptAttempts = sqlite.prepare(
    "UPDATE delivery_attempts SET outcome = 'interrupted', finished_at = ?, error = ? WHERE delivery_id = ? AND outcome IS NULL",
  );
  const requeue = sqlite.prepare(
    "UPDATE deliveries SET status = 'pending', lease_until = NULL, next_attempt_at = ?, updated_at = ? WHERE id = ?",
  );
  const recover = sqlite.transaction((now: number, ignoreLeases: boolean): number => {
    const stuck = stuckSending.all(ignoreLeases ? 1 : 0, now) as { id: number }[];
    for (const { id } of stuck) {
      interruptAttempts.run(
        now,
        'The server stopped during this attempt; it is retried with the same idempotency key.',
        id,
      );
      requeue.run(now, now, id);
    }
    return stuck.length;
  });

  const staleCodes = sqlite.prepare(
    `SELECT id, kind, payload, status FROM deliveries WHERE expires_at IS NOT NULL AND expires_at <= ?
       AND (status = 'pending' OR (status = 'dead' AND json_extract(payload, '$.text') IS NOT NULL))`,
  );
  const markExpired = sqlite.prepare(
    "UPDATE deliveries SET status = 'expired', payload = ?, last_error = ?, updated_at = ? WHERE id = ?",
  );
  const maskDead = sqlite.prepare('UPDATE deliveries SET payload = ?, updated_at = ? WHERE id = ?');
  const expire = sqlite.transaction((now: number): number => {
    const stale = staleCodes.all(now) as {
      id: number;
      kind: DeliveryKind;
      payload: string;
      status: DeliveryStatus;
    }[];
    let expired = 0;
    for (const row of stale) {
      if (row.status === 'dead') {
        // Past its validity a dead code cannot be retried: its text goes, the status stays.
        maskDead.run(settledPayload(row), now, row.id);
        continue;
      }
      markExpired.run(
        settledPayload(row),
        'Not sent within its validity; an auth code is never sent late.',
        now,
        row.id,
      );
      expired++;
    }
    return expired;
  });

  return {
    events,
    insertFor(callId, items) {
      const now = Date.now();
      for (const item of items) {
        insert.run({
          call_id: callId,
          kind: item.kind,
          provider: item.provider,
          recipient: item.recipient,
          payload: deliveryPayloadJson(payloadOf(item)),
          expires_at: item.expiresAt ?? null,
          idempotency_key: randomUUID(),
          now,
        });
      }
    },
    notify() {
      events.emit('queued');
    },
    claimDue(now, limit, leaseUntil) {
      return limit > 0 ? claimAll(now, limit, leaseUntil) : [];
    },
    finishAttempts(finished) {
      finishAll(finished);
    },
    recoverInterrupted(now, options = {}) {
      return recover(now, options.ignoreLeases === true);
    },
    expireStale(now) {
      return expire(now);
    },
    pendingPushes() {
      const row = sqlite
        .prepare("SELECT count(*) AS n FROM deliveries WHERE status = 'pending' AND kind = 'push'")
        .get() as { n: number };
      return Number(row.n);
    },
    makePushesDue(now) {
      return sqlite
        .prepare(
          "UPDATE deliveries SET next_attempt_at = ?, updated_at = ? WHERE status = 'pending' AND kind = 'push'",
        )
        .run(now, now).changes;
    },
    retry(id, now) {
      return (
        sqlite
          .prepare(
            `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?, updated_at = ? WHERE id = ? AND status = 'dead' AND ${RESENDABLE}`,
          )
          .run(now, now, id).changes === 1
      );
    },
    retryAllDead(now) {
      return sqlite
        .prepare(
          `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?, updated_at = ? WHERE status = 'dead' AND ${RESENDABLE}`,
        )
        .run(now, now).changes;
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
    recordProviderStatus(providerId, status, now) {
      return (
        sqlite
          .prepare('UPDATE deliveries SET provider_status = ?, updated_at = ? WHERE provider_id = ?')
          .run(status, now, providerId).changes > 0
      );
    },
    findById(id) {
      return db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirst();
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
      let qb = db.selectFrom('deliveries').selectAll();
      if (query.status) qb = qb.where('status', '=', query.status);
      if (query.kind) qb = qb.where('kind', '=', query.kind);
      if (query.callId !== undefined) qb = qb.where('call_id', '=', query.callId);
      if (page.before !== undefined) qb = qb.where('id', '<', page.before);
      return qb.orderBy('id', 'desc').limit(page.limit).execute();
    },
    async counts() {
      const rows = await db
        .selectFrom('deliveries')
        .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
        .groupBy('status')
        .execute();
      const counts = Object.fromEntries(DELIVERY_STATUSES.map((s) => [s, 0])) as Record<
        DeliveryStatus,
        number
      >;
      for (const r of rows) counts[r.status] = Number(r.n);
      return counts;
    },
  };
}

export type { AttemptOutcome, DeliveryKind, DeliveryStatus };
