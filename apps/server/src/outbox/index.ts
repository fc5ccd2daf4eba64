import type { FastifyBaseLogger } from 'fastify';
import type { PushProvider, SmsProvider } from '../providers/types.js';
import type { Sealer } from '../secrets/sealer.js';
import type { SchoolScope, Store } from '../store/index.js';
import type { CircuitChange, CircuitState } from './circuit.js';
import { createDeliveryRepository, type DeliveryRepository, deleteForCalls } from './deliveries.js';
import { Dispatcher } from './dispatcher.js';
import { createEnqueue, type Enqueue } from './enqueue.js';
import { Lane, type LaneLimits, Lanes } from './lanes.js';
import type { DeliveryKind } from './schema.js';
import { createOutboxSql, type ResendHook } from './sql.js';

/**
 * The outbox (docs/outbox.md): the deliveries an operation queues, from the call's commit to the
 * provider. It owns their tables and their life — states and transitions (states.ts), their SQL
 * on both databases (sql.ts), adding them in a caller's unit of work (enqueue.ts), reading them
 * (deliveries.ts, delivery-filters.ts), the providers' lanes with their circuits and the fallback
 * (lanes.ts, circuit.ts), the dispatcher that claims and sends (dispatcher.ts), a slow code's
 * hedge on the fallback (hedge.ts), retries
 * (backoff.ts), and the finished attempts recorded in batches (finished-attempts.ts).
 *
 * Made once the store is open, with it; started once the server is ready, stopped before the store
 * closes.
 */
export interface Outbox {
  /** Adds a call's deliveries inside the caller's unit of work (the call recorder's commit). */
  readonly enqueue: Enqueue;
  /** Reading the deliveries and their attempts (the console, metrics, limits); providers' later reports. */
  readonly deliveries: DeliveryRepository;
  /** Retention: the deliveries of these calls go, in the transaction that deletes the calls. */
  readonly deleteForCalls: typeof deleteForCalls;
  /** Starts sending (recovering what a stopped process left, once the database is reached). */
  start(): void;
  /** Stops claiming, finishes and records the attempts under way. */
  stop(): Promise<void>;
  /** Looks for due deliveries now. */
  wake(): void;
  /** pushNoti: every pending push due now, retries included; returns how many. */
  dispatchPushesNow(): Promise<number>;
  /** Resolves once nothing is due or under way (tests, shutdown). */
  idle(): Promise<void>;
  /** Staff send a dead delivery again; false when it is not dead or cannot be sent again. */
  resend(id: number): Promise<boolean>;
  /**
   * Every dead delivery that can be sent again, of the schools of `scope` (undefined or null:
   * every school's and none's); returns how many.
   */
  resendAllDead(scope?: SchoolScope): Promise<number>;
  /** Each provider's circuit, for the Service page and /metrics. */
  circuits(): ProviderCircuit[];
}

export interface ProviderCircuit {
  readonly kind: DeliveryKind;
  /** The provider's id: its name, `-fallback` added for the fallback. */
  readonly provider: string;
  readonly role: 'primary' | 'fallback';
  readonly state: CircuitState;
  /** Since when (epoch ms). */
  readonly since: number;
  /** Open: when it is tried again (epoch ms); otherwise null. */
  readonly until: number | null;
}

export interface OutboxOptions {
  readonly store: Store;
  readonly sms: SmsProvider;
  readonly smsFallback?: SmsProvider | undefined;
  readonly push: PushProvider;
  readonly limits: Readonly<Record<DeliveryKind, LaneLimits>>;
  readonly sealer: Sealer;
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly pollMs: number;
  /** How long a claim's lease lasts: longer than any attempt can take. */
  readonly leaseMs: number;
  /** PostgreSQL: another instance silent this long has its claims taken over. */
  readonly silentAfterMs?: number;
  /**
   * With a fallback SMS provider: a code's attempt on the primary not answered within this long
   * is sent by the fallback too (hedge.ts); null or unset: never.
   */
  readonly hedgeAfterMs?: number | null;
  readonly log: FastifyBaseLogger;
  /** A circuit changed (the metrics read `circuits()` at each scrape; this is for the log). */
  readonly onCircuitChange?: (lane: Lane, change: CircuitChange) => void;
  /**
   * A delivery was sent by `provider` while `unsure`'s attempt had not answered, or had ended
   * without knowing whether it took the message: it may have arrived twice
   * (docs/outbox.md#at-least-once-when-a-code-can-arrive-twice).
   */
  readonly onSentAfterUnsure?: (kind: DeliveryKind, provider: string, unsure: string) => void;
  /** Run in each resend's transaction (the Dashboard's roll-ups: stats/delivery-rollups.ts). */
  readonly onResend?: ResendHook | undefined;
  readonly random?: () => number;
}

/** Another instance is taken for dead when it has not announced itself for this long (it does every second). */
export const SILENT_AFTER_MS = 3000;

export function createOutbox(options: OutboxOptions): Outbox {
  const { log, store } = options;
  const sql = createOutboxSql(store, options.sealer, options.onResend);
  let dispatcher: Dispatcher | undefined;
  const onCircuitChange = (lane: Lane, change: CircuitChange) => {
    const what = {
      kind: lane.kind,
      provider: lane.id,
      from: change.from,
      to: change.to,
      reason: change.reason,
    };
    // Opening and closing are what an operator must know of; half-open is on the way back.
    if (change.to === 'half-open') log.info(what, `${lane.kind} provider ${lane.id}: probing it again`);
    else
      log.warn(
        what,
        change.to === 'open'
          ? `${lane.kind} provider ${lane.id}: circuit open (${change.reason})`
          : `${lane.kind} provider ${lane.id}: circuit closed, attempts go to it again`,
      );
    options.onCircuitChange?.(lane, change);
    // Another lane may take its deliveries over now, or it may take its own back.
    dispatcher?.mayBeDue(lane.kind);
  };
  const lanes = new Lanes([
    new Lane({ kind: 'sms', provider: options.sms }, 'primary', options.limits.sms, onCircuitChange),
    ...(options.smsFallback
      ? [
          new Lane(
            { kind: 'sms', provider: options.smsFallback },
            'fallback',
            options.limits.sms,
            onCircuitChange,
          ),
        ]
      : []),
    new Lane({ kind: 'push', provider: options.push }, 'primary', options.limits.push, onCircuitChange),
  ]);
  dispatcher = new Dispatcher({
    store,
    sql,
    lanes,
    maxAttempts: options.maxAttempts,
    retryBaseMs: options.retryBaseMs,
    retryMaxMs: options.retryMaxMs,
    pollMs: options.pollMs,
    leaseMs: options.leaseMs,
    silentAfterMs: options.silentAfterMs ?? SILENT_AFTER_MS,
    hedgeAfterMs: options.hedgeAfterMs ?? null,
    log,
    ...(options.onSentAfterUnsure ? { onSentAfterUnsure: options.onSentAfterUnsure } : {}),
    ...(options.random ? { random: options.random } : {}),
  });
  const d = dispatcher;
  /**
   * Another instance queued deliveries (PostgreSQL): this one's dispatcher helps send them at once
   * rather than at its next poll (claims skip what another instance holds).
   */
  const queuedElsewhere = (_ids: readonly number[], queued: boolean) => {
    if (queued) d.mayBeDue();
  };
  return {
    enqueue: createEnqueue({ store, sealer: options.sealer, dispatcher: d, leaseMs: options.leaseMs }),
    deliveries: createDeliveryRepository(store.db, store.dialect),
    deleteForCalls,
    start() {
      // Auth codes a release before sealing kept in clear are sealed now.
      void store.whenReady(
        async () => {
          const sealed = await sql.sealLegacyTexts();
          if (sealed > 0) log.info({ sealed }, 'auth codes waiting to be sent are sealed now');
        },
        (err) => log.error({ err }, 'could not seal the auth codes waiting to be sent'),
      );
      store.events.on('callsFromOtherInstances', queuedElsewhere);
      d.start();
    },
    async stop() {
      store.events.off('callsFromOtherInstances', queuedElsewhere);
      await d.stop();
    },
    wake: () => d.wake(),
    dispatchPushesNow: () => d.dispatchPushesNow(),
    idle: () => d.idle(),
    async resend(id) {
      const done = await sql.resend(id, Date.now());
      if (done) d.mayBeDue();
      return done;
    },
    async resendAllDead(scope) {
      const count = await sql.resendAllDead(Date.now(), scope);
      if (count > 0) d.mayBeDue();
      return count;
    },
    circuits: () =>
      lanes.all.map((lane) => ({
        kind: lane.kind,
        provider: lane.id,
        role: lane.role,
        state: lane.state(),
        since: lane.circuit.since(),
        until: lane.circuit.until(),
      })),
  };
}

export {
  CALL_HAS_FAILED_DELIVERY_SQL,
  callHasDeliveryOnItsWay,
  callHasFailedDelivery,
} from './call-conditions.js';
export type {
  AttemptRow,
  DeliveryCursor,
  DeliveryQuery,
  DeliveryRepository,
  DeliveryRow,
  OutboxState,
} from './deliveries.js';
export {
  type BucketOf,
  countsQueuedSince,
  deliveryGroupsQueued,
  hourlyDeliveryGroups,
  hourlySchoolDeliveryGroups,
  oldestOnTheirWayAt,
  oldestQueuedAt,
  onTheirWayQueuedBefore,
} from './delivery-counts.js';
export { deliveryState, recipientNeedles } from './delivery-filters.js';
export type { CallDeliveries, Enqueue, Enqueued } from './enqueue.js';
export { OUTBOX_TABLES } from './migrations.js';
export { onTheirWaySince } from './on-their-way.js';
export type { DeliveryPayload, NewDelivery, PushPayload, SmsPayload } from './payload.js';
export { deliveryPayloadJson, parseDeliveryPayload } from './payload.js';
export {
  type AttemptOutcome,
  type DeliveriesTable,
  type DeliveryAttemptsTable,
  type DeliveryKind,
  type DeliveryStatus,
  QUEUED_WITHIN_MS,
} from './schema.js';
export type { AttemptResult, Claimed } from './sql.js';
