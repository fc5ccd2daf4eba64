import type { Sealer } from '../secrets/sealer.js';
import { jsonParameter, type SqliteTx, type StatementPart, type Store } from '../store/index.js';
import type { DeliveryRow } from './deliveries.js';
import type { Dispatcher } from './dispatcher.js';
import type { RecordedInCommit } from './finished-attempts.js';
import type { Lane } from './lanes.js';
import { type DeliveryInsert, type NewDelivery, newDeliveryRows } from './payload.js';
import type { Claimed } from './sql.js';
import { finishPart, finishValues } from './sql-finish.js';

/**
 * What the step needs of the dispatcher: a lane's slot for a delivery, the hand-over, and the
 * finished attempts recorded in the same commit.
 */
export type HandOff = Pick<
  Dispatcher,
  'reserve' | 'release' | 'take' | 'mayBeDue' | 'recordFinishedIn' | 'takeFinished'
>;

/** The deliveries one call queues. */
export interface CallDeliveries {
  /** The call's id; in the outbox's part of a statement (PostgreSQL), its `ord` there (`EnqueuePart`). */
  readonly callId: number;
  /** The school the call belongs to: its deliveries are that school's too (null: none). */
  readonly schoolId: number | null;
  readonly items: readonly NewDelivery[];
}

/** Deliveries added in a unit of work that has not ended yet: tell the outbox how it ended. */
export interface Enqueued {
  /** How many were added, claimed ones included. */
  readonly count: number;
  /** How many were left `pending`, for a claim pass (here or, on PostgreSQL, on another instance). */
  readonly pending: number;
  /** The unit of work is durable: what was claimed in it is sent at once, the rest looked for. */
  committed(): void;
  /** It failed (or is not known to be on disk): the lanes' slots taken for it are free again. */
  failed(): void;
}

/**
 * Adds deliveries inside the caller's unit of work (store/unit-of-work.ts), so that they are
 * committed with whatever the caller writes there: the call recorder's group commit (recording/)
 * inserts a call and its deliveries in one transaction, and a `200` means both are durable. A
 * delivery whose provider's lane has room is claimed in that same commit (`sending` under this
 * instance's lease, its attempt row written) and handed to the dispatcher once the commit is
 * durable: no claim pass, and no transaction of its own, between the answer and the provider (a
 * new row is this instance's alone: no other can hold it yet). Without room it is queued
 * `pending` for a claim. SQLite runs prepared statements in the caller's synchronous transaction;
 * on PostgreSQL the outbox gives its part of the caller's one statement (`postgres`).
 */
export interface Enqueue {
  (tx: SqliteTx, calls: readonly CallDeliveries[], now: number): Enqueued;
  /** PostgreSQL: the outbox's part of the call recorder's one statement. */
  readonly postgres: EnqueuePart;
}

/**
 * PostgreSQL: the outbox's part of the call recorder's group commit, one statement
 * (store/statement-parts.ts, composed by recording/writers.ts): the batch's deliveries inserted,
 * the attempts of those claimed, and the attempts finished since the last commit recorded
 * (sql-finish.ts `finishPart`), each for the whole batch. Only this part names the outbox's tables.
 */
export interface EnqueuePart {
  /** Its text, reading the batch's new calls from `calls` (ord, id), its parameters from `first`. */
  part(calls: string, first: number): StatementPart;
  /**
   * The values of its parameters for a batch: each call's deliveries, `callId` the call's `ord`,
   * planned and claimed as on SQLite, and the finished attempts waiting. The caller says how the
   * statement ended.
   */
  bind(calls: readonly CallDeliveries[], now: number): BoundEnqueue;
}

/** A batch's deliveries in a statement that has not ended yet. */
export interface BoundEnqueue extends Pick<Enqueued, 'count' | 'pending' | 'failed'> {
  readonly values: readonly unknown[];
  /** The statement committed, answering `row`: what was claimed in it is sent at once. */
  committed(row: Readonly<Record<string, unknown>>): void;
}

/** The columns a new delivery is inserted with. */
const DELIVERY_COLUMNS = [
  'call_id',
  'school_id',
  'kind',
  'provider',
  'recipient',
  'payload',
  'secret',
  'status',
  'attempts',
  'next_attempt_at',
  'lease_until',
  'leased_by',
  'expires_at',
  'idempotency_key',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof DeliveryInsert)[];

const NOTHING: Enqueued = { count: 0, pending: 0, committed() {}, failed() {} };

/** A delivery row to insert: `pending`, or claimed for `lane` (with its SMS text, handed over). */
type Planned =
  | { readonly row: DeliveryInsert; readonly lane?: undefined }
  | { readonly row: DeliveryRowInsert; readonly lane: Lane; readonly text: string | undefined };

/** A claimed row as inserted: `sending` under this instance's lease. */
type DeliveryRowInsert = Omit<DeliveryInsert, 'status' | 'attempts' | 'lease_until' | 'leased_by'> & {
  readonly status: 'sending';
  readonly attempts: 1;
  readonly lease_until: number;
  readonly leased_by: string;
};

export function createEnqueue(options: {
  readonly store: Store;
  readonly sealer: Sealer;
  readonly dispatcher: HandOff;
  /** How long a claim's lease lasts (ms). */
  readonly leaseMs: number;
}): Enqueue {
  const { store, dispatcher } = options;
  const planner = createPlanner({ ...options, instance: store.instance });
  return Object.assign(sqliteEnqueue(store, planner, dispatcher), {
    postgres: postgresPart(planner, dispatcher),
  });
}

/** Planning a batch's deliveries, and giving back the lanes' slots a plan took. */
interface Planner {
  /**
   * Each delivery's row: claimed (the `claim` of states.ts) where its provider's lane has room and
   * it is still live, else `pending`. The lanes' slots are taken here; `release` gives them back.
   */
  plan(calls: readonly CallDeliveries[], now: number): Planned[];
  /** The lanes' slots taken for a commit that failed are free again. */
  release(planned: readonly Planned[]): void;
}

function createPlanner(options: {
  readonly sealer: Sealer;
  readonly dispatcher: HandOff;
  readonly leaseMs: number;
  /** This instance, whose lease a claimed row is under. */
  readonly instance: string;
}): Planner {
  const { sealer, dispatcher } = options;
  const release = (planned: readonly Planned[]): void => {
    for (const p of planned) if (p.lane) dispatcher.release(p.lane);
  };
  const plan = (calls: readonly CallDeliveries[], now: number): Planned[] => {
    const planned: Planned[] = [];
    try {
      for (const { callId, schoolId, items } of calls) {
        const rows = newDeliveryRows(callId, schoolId, items, now, sealer);
        for (let j = 0; j < rows.length; j++) {
          const row = rows[j] as DeliveryInsert;
          const live = row.expires_at === null || row.expires_at > now;
          const lane = live ? dispatcher.reserve(row.kind, row.provider, now) : undefined;
          if (!lane) {
            planned.push({ row });
            continue;
          }
          const item = items[j] as NewDelivery;
          planned.push({
            row: claimedRow(row, lane.id, now + options.leaseMs, options.instance),
            lane,
            text: item.kind === 'sms' ? item.payload.text : undefined,
          });
        }
      }
    } catch (err) {
      release(planned);
      throw err;
    }
    return planned;
  };
  return { plan, release };
}

/**
 * `row` claimed for `provider`'s lane: `sending` under this instance's lease. Every column named
 * (as in claimedOf): an object spread of a wide row, then its fields overwritten, cost more than
 * the row's insert.
 */
function claimedRow(
  row: DeliveryInsert,
  provider: string,
  leaseUntil: number,
  instance: string,
): DeliveryRowInsert {
  return {
    call_id: row.call_id,
    school_id: row.school_id,
    kind: row.kind,
    provider,
    recipient: row.recipient,
    payload: row.payload,
    secret: row.secret,
    status: 'sending',
    attempts: 1,
    next_attempt_at: row.next_attempt_at,
    lease_until: leaseUntil,
    leased_by: instance,
    expires_at: row.expires_at,
    idempotency_key: row.idempotency_key,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** What the caller tells once its unit of work has ended. */
function enqueued(
  planner: Planner,
  dispatcher: HandOff,
  planned: readonly Planned[],
  claimed: { lane: Lane; claimed: Claimed }[],
  finishedInCommit: RecordedInCommit | undefined,
): Enqueued {
  if (planned.length === 0 && !finishedInCommit) return NOTHING;
  const pending = planned.length - claimed.length;
  return {
    count: planned.length,
    pending,
    committed() {
      finishedInCommit?.committed();
      dispatcher.take(claimed);
      if (pending > 0) dispatcher.mayBeDue();
    },
    failed() {
      // Not committed, or not known to be on disk: what was claimed is left to the recovery of
      // `sending` deliveries, and the finished attempts are recorded again.
      planner.release(planned);
      finishedInCommit?.failed();
    },
  };
}

/** The claimed delivery as the dispatcher receives it: the row as inserted, with its ids. */
function claimedOf(
  p: Extract<Planned, { lane: Lane }>,
  deliveryId: number,
  attemptId: number,
  callId = p.row.call_id,
): { lane: Lane; claimed: Claimed } {
  const { row } = p;
  const delivery: DeliveryRow = {
    id: deliveryId,
    call_id: callId,
    school_id: row.school_id,
    kind: row.kind,
    provider: row.provider,
    recipient: row.recipient,
    payload: row.payload,
    secret: row.secret,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.next_attempt_at,
    lease_until: row.lease_until,
    leased_by: row.leased_by,
    expires_at: row.expires_at,
    idempotency_key: row.idempotency_key,
    created_at: row.created_at,
    updated_at: row.updated_at,
    provider_id: null,
    provider_status: null,
    unsure_provider: null,
    last_error: null,
    sent_at: null,
  };
  return {
    lane: p.lane,
    claimed: p.text === undefined ? { delivery, attemptId } : { delivery, attemptId, text: p.text },
  };
}

/** SQLite: prepared statements run inside the caller's synchronous transaction. */
function sqliteEnqueue(
  store: Store,
  planner: Planner,
  dispatcher: HandOff,
): (tx: SqliteTx, calls: readonly CallDeliveries[], now: number) => Enqueued {
  const handle = store.sqlite;
  // Bound by position (a lookup by name for each of sixteen columns is dearer).
  const insertDelivery = handle?.prepare(
    `INSERT INTO deliveries (${DELIVERY_COLUMNS.join(', ')})
     VALUES (${DELIVERY_COLUMNS.map(() => '?').join(', ')})`,
  );
  const insertAttempt = handle?.prepare(
    'INSERT INTO delivery_attempts (delivery_id, provider, started_at) VALUES (?, ?, ?)',
  );
  // Named for CPU profiles (bench/stages.mjs).
  return function enqueueOnSqlite(tx, calls, now) {
    if (!insertDelivery || !insertAttempt) throw new Error('enqueue: not a SQLite store');
    const planned = planner.plan(calls, now);
    const claimed: { lane: Lane; claimed: Claimed }[] = [];
    let finishedInCommit: RecordedInCommit | undefined;
    try {
      finishedInCommit = dispatcher.recordFinishedIn(tx);
      for (const p of planned) {
        const row = p.row as Record<(typeof DELIVERY_COLUMNS)[number], unknown>;
        const deliveryId = Number(insertDelivery.run(DELIVERY_COLUMNS.map((c) => row[c])).lastInsertRowid);
        if (!p.lane) continue;
        const attemptId = Number(insertAttempt.run(deliveryId, p.lane.id, now).lastInsertRowid);
        claimed.push(claimedOf(p, deliveryId, attemptId));
      }
    } catch (err) {
      // The transaction rolls back: the lanes' slots taken are free again.
      planner.release(planned);
      finishedInCommit?.failed();
      throw err;
    }
    return enqueued(planner, dispatcher, planned, claimed, finishedInCommit);
  };
}

/** PostgreSQL: the outbox's part of the recorder's statement (EnqueuePart). */
function postgresPart(planner: Planner, dispatcher: HandOff): EnqueuePart {
  return {
    part: enqueueStatementPart,
    bind(calls, now) {
      const planned = planner.plan(calls, now);
      let finished: ReturnType<HandOff['takeFinished']>;
      let values: unknown[];
      try {
        finished = dispatcher.takeFinished();
        values = [jsonParameter(planned.map((p) => p.row)), now, ...finishValues(finished?.batch ?? [])];
      } catch (err) {
        planner.release(planned);
        finished?.recorded.failed();
        throw err;
      }
      const claims = planned.filter((p) => p.lane !== undefined).length;
      return {
        values,
        count: planned.length,
        pending: planned.length - claims,
        committed(row) {
          const claimed = claimedInRow(dispatcher, planned, row);
          enqueued(planner, dispatcher, planned, claimed, finished?.recorded).committed();
        },
        failed() {
          planner.release(planned);
          finished?.recorded.failed();
        },
      };
    },
  };
}

/** The text of the outbox's part (EnqueuePart's `part`): its CTEs, its columns, its parameters. */
function enqueueStatementPart(calls: string, first: number): StatementPart {
  const finish = finishPart(first + 2);
  // The deliveries come with their call's `ord` for a `call_id`: its id is the ord-th of the
  // batch's ids, in their order in the batch.
  const callId = `((SELECT array_agg(id ORDER BY ord) FROM ${calls}))[d.call_id]`;
  const inserted = DELIVERY_COLUMNS.map((c) => (c === 'call_id' ? callId : `d.${c}`)).join(', ');
  return {
    // The attempts of those claimed start now.
    ctes: `outbox_new AS (
            INSERT INTO deliveries (${DELIVERY_COLUMNS.join(', ')})
            SELECT ${inserted}
            FROM json_populate_recordset(NULL::deliveries, $${first}::json) WITH ORDINALITY AS d
            ORDER BY d.ordinality
            RETURNING id, call_id, idempotency_key, status, provider),
          outbox_claimed AS (
            INSERT INTO delivery_attempts (delivery_id, provider, started_at)
            SELECT id, provider, $${first + 1}::bigint FROM outbox_new WHERE status = 'sending'
            RETURNING id, delivery_id),
          ${finish.ctes}`,
    columns: `(SELECT json_agg(json_build_array(idempotency_key, id, call_id)) FROM outbox_new
            WHERE status = 'sending') AS outbox_sending,
          (SELECT json_agg(json_build_array(delivery_id, id)) FROM outbox_claimed) AS outbox_claimed`,
    parameters: 2 + finish.parameters,
  };
}

/**
 * What the statement claimed, from the row it answered: [idempotency key, delivery id, call id]
 * of each delivery claimed, [delivery id, attempt id] of each attempt.
 */
function claimedInRow(
  dispatcher: HandOff,
  planned: readonly Planned[],
  row: Readonly<Record<string, unknown>>,
): { lane: Lane; claimed: Claimed }[] {
  const sending = (row.outbox_sending ?? []) as [string, number, number][];
  const attempts = new Map((row.outbox_claimed ?? []) as [number, number][]);
  const byKey = new Map(sending.map((r) => [r[0], r]));
  const claimed: { lane: Lane; claimed: Claimed }[] = [];
  for (const p of planned) {
    if (!p.lane) continue;
    const r = byKey.get(p.row.idempotency_key);
    const attempt = r && attempts.get(r[1]);
    // Never so: each planned row is inserted, or the statement fails whole.
    if (r && attempt !== undefined) claimed.push(claimedOf(p, r[1], attempt, r[2]));
    else dispatcher.release(p.lane);
  }
  return claimed;
}
