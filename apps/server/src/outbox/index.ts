import type { FastifyBaseLogger } from 'fastify';
import type { PushProvider, SmsProvider } from '../providers/types.js';
import type { Sealer } from '../secrets/sealer.js';
import type { Store } from '../store/index.js';
import type { DeliveryKind } from '../store/schema.js';
import type { CircuitChange, CircuitState } from './circuit.js';
import { Dispatcher } from './dispatcher.js';
import { createIntake, type OutboxIntake } from './intake.js';
import { Lane, type LaneLimits, Lanes } from './lanes.js';
import { createOutboxSql, type OutboxSql } from './sql.js';

/**
 * The outbox (docs/outbox.md): the deliveries an operation queues, from the call's
 * commit to the provider. It owns their life — states and transitions (states.ts), their SQL on
 * both databases (sql.ts), the step in the call recorder's commit (intake.ts), the providers'
 * lanes with their circuits and the fallback (lanes.ts, circuit.ts), the dispatcher that claims
 * and sends (dispatcher.ts), retries (backoff.ts), and the recording of attempts (recorder.ts).
 *
 * Made before the store (the store's call recorder takes the intake), started once the store is
 * open and the server ready, stopped before the store closes.
 */
export interface Outbox {
  /** The step the call recorder runs in its transaction. */
  readonly intake: OutboxIntake;
  /** Starts sending, on `store` (recovering what a stopped process left, once the database is reached). */
  start(store: Store): void;
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
  /** Every dead delivery that can be sent again; returns how many. */
  resendAllDead(): Promise<number>;
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
}

export interface OutboxOptions {
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
  readonly log: FastifyBaseLogger;
  /** A circuit changed (the metrics read `circuits()` at each scrape; this is for the log). */
  readonly onCircuitChange?: (lane: Lane, change: CircuitChange) => void;
  readonly random?: () => number;
}

/** Another instance is taken for dead when it has not announced itself for this long (it does every 2 s). */
export const SILENT_AFTER_MS = 6000;

export function createOutbox(options: OutboxOptions): Outbox {
  const { log } = options;
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
    lanes,
    maxAttempts: options.maxAttempts,
    retryBaseMs: options.retryBaseMs,
    retryMaxMs: options.retryMaxMs,
    pollMs: options.pollMs,
    leaseMs: options.leaseMs,
    silentAfterMs: options.silentAfterMs ?? SILENT_AFTER_MS,
    log,
    ...(options.random ? { random: options.random } : {}),
  });
  const d = dispatcher;
  let sql: OutboxSql | undefined;
  const sqlOf = (): OutboxSql => {
    if (!sql) throw new Error('The outbox has not started.');
    return sql;
  };
  return {
    intake: createIntake({ sealer: options.sealer, dispatcher: d, leaseMs: options.leaseMs }),
    start(store) {
      sql = createOutboxSql({ ...store.database, sealer: options.sealer });
      // Auth codes a release before sealing kept in clear are sealed now.
      const s = sql;
      void store.whenReady(
        async () => {
          const sealed = await s.sealLegacyTexts();
          if (sealed > 0) log.info({ sealed }, 'auth codes waiting to be sent are sealed now');
        },
        (err) => log.error({ err }, 'could not seal the auth codes waiting to be sent'),
      );
      d.start(store, sql);
    },
    stop: () => d.stop(),
    wake: () => d.wake(),
    dispatchPushesNow: () => d.dispatchPushesNow(),
    idle: () => d.idle(),
    async resend(id) {
      const done = await sqlOf().resend(id, Date.now());
      if (done) d.mayBeDue();
      return done;
    },
    async resendAllDead() {
      const count = await sqlOf().resendAllDead(Date.now());
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
      })),
  };
}

export type { OutboxIntake } from './intake.js';
export type { DeliveryPayload, NewDelivery, PushPayload, SmsPayload } from './payload.js';
export { deliveryPayloadJson, parseDeliveryPayload } from './payload.js';
export type { AttemptResult, Claimed, DeliveryRow } from './sql.js';
