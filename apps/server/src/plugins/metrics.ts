import { type Binding, DELIVERY_STATUSES, type DeliveryStatus } from '@school/contract';
import type { FastifyBaseLogger } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { CodeRefusal } from '../operations/handlers.js';
import { CIRCUIT_GAUGE } from '../outbox/circuit.js';
import type { ProviderCircuit } from '../outbox/index.js';
import type { Provider, SendResult } from '../providers/types.js';
import type { CallOutcome } from '../recording/record.js';
import { isUnavailableError } from '../store/index.js';
import type { DiskSpace } from './disk-space.js';
import type { Readiness, Refusal } from './readiness.js';

/**
 * Prometheus metrics (docs/monitoring.md#metrics): a registry of the server's own, so that two
 * apps in one process (tests) never share counters. The plugin reads no other service: what it
 * reports is given to it. Calls are counted where every door's call is recorded
 * (recording/exchange.ts), provider requests where the dispatcher sends them
 * (`instrumentProvider`); readiness, the circuits, the partitions job and the outbox hand it a
 * reader each (`watch…`), read at scrape time. The outbox's figures are read from the database
 * (plugins/outbox-metrics.ts), so every instance sharing a database reports the same outbox.
 */

declare module 'fastify' {
  interface FastifyInstance {
    /** The server's metrics: what is observed, and the scrape. */
    readonly metrics: Metrics;
  }
}

/** What the partitions job (plugins/partitions.ts) last found. */
export interface PartitionWatch {
  /** Until when (epoch ms) every partitioned table had its periods made; null before a run. */
  readonly coveredUntil: number | null;
  /** Rows in the default partitions (counted up to 1 000); null before a run. */
  readonly defaultRows: number | null;
}

/** The outbox as one scrape reads it from the shared database (plugins/outbox-metrics.ts). */
export interface OutboxFigures {
  /** Deliveries by status, the logged ones counted as `sent`. */
  readonly deliveries: Readonly<Record<DeliveryStatus, number>>;
  /** Pending deliveries due now. */
  readonly due: number;
  /** How long the oldest pending delivery due now has been due (s; 0 when none is). */
  readonly oldestDueAgeSeconds: number;
  /** Each lane's provider, and whether its recorded attempts say it refuses for good. */
  readonly refusing: readonly {
    readonly kind: 'sms' | 'push';
    readonly provider: string;
    readonly refusing: boolean;
  }[];
}

export type ProviderOutcome = 'sent' | 'transient' | 'permanent' | 'error';

export interface Metrics {
  readonly registry: Registry;
  /** One call, whichever door it came in by, once its record was attempted. */
  observeCall(call: {
    readonly operation: string | null;
    readonly binding: Binding;
    readonly outcome: CallOutcome;
    readonly seconds: number;
  }): void;
  /** One provider request (an attempt of a delivery). */
  observeProviderRequest(request: {
    readonly kind: 'sms' | 'push';
    readonly provider: string;
    readonly outcome: ProviderOutcome;
    readonly seconds: number;
  }): void;
  /** A call refused before anything was written: the database away, or the disk nearly full. */
  observeRefusal(cause: Refusal['cause']): void;
  /** An AuthCode whose SMS was not queued: its destination refused, or a limit reached. */
  observeCodeRefused(reason: CodeRefusal): void;
  /** A delivery sent by `provider` after `unsure` may have taken it: it may have arrived twice. */
  observeSentAfterUnsure(kind: 'sms' | 'push', provider: string, unsure: string): void;
  /** Reports readiness and the disk at each scrape. */
  watchReadiness(readiness: Readiness, disk: DiskSpace): void;
  /** Reports the providers' circuits at each scrape. */
  watchCircuits(circuits: () => readonly ProviderCircuit[]): void;
  /** Reports, at each scrape, what the partitions job found at its last run (PostgreSQL). */
  watchPartitions(read: () => PartitionWatch): void;
  /**
   * Reports the outbox at each scrape, as `read` finds it in the database. When it fails (the
   * database away) the outbox series go missing rather than lie.
   */
  watchOutbox(read: () => Promise<OutboxFigures>): void;
  /** One retention run that finished: the calls it removed, by whole partitions and in batches. */
  observeRetention(run: {
    readonly at: number;
    readonly partitionCalls: number;
    readonly batchCalls: number;
  }): void;
  /** The exposition text, the outbox read first (`watchOutbox`). */
  scrape(): Promise<string>;
}

export const metricsPlugin = fp(
  async (app) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix: 'school_' });
    // The exposition lists the series in the order they were made: these run in that order.
    const calls = callSeries(registry);
    const providerRequests = providerRequestSeries(registry);
    const outbox = outboxSeries(registry, app.log);
    const refusals = refusalSeries(registry);
    const providers = providerSeries(registry);
    const health = healthSeries(registry);
    const partitions = partitionSeries(registry);
    const retention = retentionSeries(registry);
    const codes = codeRefusalSeries(registry);
    const metrics: Metrics = {
      registry,
      ...calls,
      ...providerRequests,
      ...refusals,
      ...providers,
      ...health,
      ...partitions,
      ...retention,
      ...codes,
      watchOutbox: outbox.watchOutbox,
      async scrape() {
        await outbox.read();
        return registry.metrics();
      },
    };
    app.decorate('metrics', metrics);
    // The call durations read `reply.elapsedTime`, which Fastify measures for an onResponse hook:
    // the request log's (logging.ts), registered for every app.
  },
  { name: 'metrics' },
);

/** Calls answered, by operation, binding and outcome, and how long each took to be recorded. */
function callSeries(registry: Registry): Pick<Metrics, 'observeCall'> {
  const calls = new Counter({
    name: 'school_calls_total',
    help: 'Operation calls answered, by operation, binding and outcome (unrecorded: the record failed).',
    labelNames: ['operation', 'binding', 'outcome'] as const,
    registers: [registry],
  });
  const callDuration = new Histogram({
    name: 'school_call_duration_seconds',
    help: 'Time from a call arriving to its record being committed, by operation and binding.',
    labelNames: ['operation', 'binding'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return {
    observeCall({ operation, binding, outcome, seconds }) {
      const op = operation ?? 'unknown';
      calls.inc({ operation: op, binding, outcome });
      callDuration.observe({ operation: op, binding }, seconds);
    },
  };
}

/** How long each request to a provider took, by outcome. */
function providerRequestSeries(registry: Registry): Pick<Metrics, 'observeProviderRequest'> {
  const providerDuration = new Histogram({
    name: 'school_provider_request_duration_seconds',
    help: 'Requests to the SMS and push providers, by kind, provider and outcome.',
    labelNames: ['kind', 'provider', 'outcome'] as const,
    // Up to PROVIDER_TIMEOUT_MS (10 s by default, 120 s at most).
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  return {
    observeProviderRequest({ kind, provider, outcome, seconds }) {
      providerDuration.observe({ kind, provider, outcome }, seconds);
    },
  };
}

/**
 * The outbox's gauges, set at each scrape from what the reader given to `watchOutbox` finds; reset
 * (the series missing) when it fails.
 */
function outboxSeries(
  registry: Registry,
  log: FastifyBaseLogger,
): Pick<Metrics, 'watchOutbox'> & { read(): Promise<void> } {
  const deliveries = new Gauge({
    name: 'school_deliveries',
    help: 'Deliveries in the database, by status.',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const outboxDue = new Gauge({
    name: 'school_outbox_due',
    help: 'Pending deliveries due now (waiting for the dispatcher).',
    registers: [registry],
  });
  const refusing = new Gauge({
    name: 'school_provider_refusing',
    help: "1 while a provider's recorded attempts say it refuses the school's messages for good (its account suspended, its credentials refused: 401, 402, 403; docs/outbox.md#a-provider-that-refuses), 0 otherwise; by kind and provider. Read from the database: every instance says the same.",
    labelNames: ['kind', 'provider'] as const,
    registers: [registry],
  });
  const oldestDueAge = new Gauge({
    name: 'school_outbox_oldest_due_age_seconds',
    help: 'How long the oldest pending delivery due now has been due (0 when none is).',
    registers: [registry],
  });
  let figures: (() => Promise<OutboxFigures>) | undefined;
  return {
    watchOutbox(read) {
      figures = read;
    },
    async read() {
      if (!figures) return;
      try {
        const found = await figures();
        for (const { kind, provider, refusing: refuses } of found.refusing)
          refusing.set({ kind, provider }, refuses ? 1 : 0);
        for (const status of DELIVERY_STATUSES) deliveries.set({ status }, found.deliveries[status]);
        outboxDue.set(found.due);
        oldestDueAge.set(found.oldestDueAgeSeconds);
      } catch (err) {
        // The rest is still worth scraping; the outbox series go missing rather than lie.
        if (!isUnavailableError(err)) log.error({ err }, 'could not read the outbox for /metrics');
        deliveries.reset();
        outboxDue.reset();
        oldestDueAge.reset();
        refusing.reset();
      }
    },
  };
}

/** Calls refused before anything was written, by cause. */
function refusalSeries(registry: Registry): Pick<Metrics, 'observeRefusal'> {
  const refused = new Counter({
    name: 'school_calls_refused_total',
    help: "Calls refused before anything was written (SOAP: a 500 fault; HTTP GET/POST and the console's Send: 503; with Retry-After), by cause (database: unreachable or not migrated; disk: nearly full).",
    labelNames: ['cause'] as const,
    registers: [registry],
  });
  return {
    observeRefusal(cause) {
      refused.inc({ cause });
    },
  };
}

/** The providers' side: deliveries that may have arrived twice, and each provider's circuit. */
function providerSeries(registry: Registry): Pick<Metrics, 'observeSentAfterUnsure' | 'watchCircuits'> {
  const sentAfterUnsure = new Counter({
    name: 'school_deliveries_sent_after_unsure_total',
    help: "Deliveries sent by a provider while another's attempt had not answered (a hedged code) or had ended without knowing whether it took them (a timeout): they may have arrived twice.",
    labelNames: ['kind', 'provider', 'unsure'] as const,
    registers: [registry],
  });
  let circuits: (() => readonly ProviderCircuit[]) | undefined;
  new Gauge({
    name: 'school_provider_circuit',
    help: "Each provider's circuit breaker, by kind and provider: 0 closed (sent to), 1 half-open (probed), 2 open (not sent to for a cool-down).",
    labelNames: ['kind', 'provider'] as const,
    registers: [registry],
    collect() {
      for (const c of circuits?.() ?? [])
        this.set({ kind: c.kind, provider: c.provider }, CIRCUIT_GAUGE[c.state]);
    },
  });
  return {
    observeSentAfterUnsure(kind, provider, unsure) {
      sentAfterUnsure.inc({ kind, provider, unsure });
    },
    watchCircuits(read) {
      circuits = read;
    },
  };
}

/** Readiness, the database, the read replica and the disk, as the readiness plugin sees them. */
function healthSeries(registry: Registry): Pick<Metrics, 'watchReadiness'> {
  /** Read at each scrape, once the readiness plugin has given them. */
  let watched: { readiness: Readiness; disk: DiskSpace } | undefined;
  new Gauge({
    name: 'school_ready',
    help: '1 while calls are taken, 0 while they are refused (what /readyz says).',
    registers: [registry],
    collect() {
      if (watched) this.set(watched.readiness.report().ready ? 1 : 0);
    },
  });
  new Gauge({
    name: 'school_database_up',
    help: '1 while the database can be reached and is migrated, else 0.',
    registers: [registry],
    collect() {
      const report = watched?.readiness.report();
      if (report) this.set(report.database && report.migrations ? 1 : 0);
    },
  });
  new Gauge({
    name: 'school_database_replica_lag_seconds',
    help: 'How far the read replica (DATABASE_READ_URL) was behind the primary at its last check; absent without a replica, or while it cannot be read.',
    registers: [registry],
    collect() {
      const lagMs = watched?.readiness.report().replica?.lagMs;
      if (lagMs === undefined || lagMs === null) this.reset();
      else this.set(lagMs / 1000);
    },
  });
  new Gauge({
    name: 'school_database_replica_used',
    help: '1 while History, exports, search and the Dashboard read from the read replica; 0 while they read from the primary because it lags or is down; absent without a replica.',
    registers: [registry],
    collect() {
      const replica = watched?.readiness.report().replica;
      if (replica === undefined) this.reset();
      else this.set(replica.state === 'ok' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'school_disk_free_bytes',
    help: 'Free bytes in DATA_DIR at the last check (SQLite only).',
    registers: [registry],
    collect() {
      const free = watched?.disk.status().freeBytes;
      if (free === undefined || free === null) this.reset();
      else this.set(free);
    },
  });
  new Gauge({
    name: 'school_disk_refusing_calls',
    help: '1 while new calls are refused because free space is below REFUSE_FREE_DISK_MB (SQLite only).',
    registers: [registry],
    collect() {
      if (watched) this.set(watched.disk.status().refusingCalls ? 1 : 0);
    },
  });
  return {
    watchReadiness(readiness, disk) {
      watched = { readiness, disk };
    },
  };
}

/** What the partitions job last found (PostgreSQL). */
function partitionSeries(registry: Registry): Pick<Metrics, 'watchPartitions'> {
  let partitions: (() => PartitionWatch) | undefined;
  new Gauge({
    name: 'school_database_partitions_ahead_seconds',
    help: "How far ahead every time-partitioned table (calls, deliveries, attempts) has its partitions made, at the partitions job's last run (PostgreSQL; it keeps 7 days and one period ahead, hourly). Near 0: calls are about to go to the default partition.",
    registers: [registry],
    collect() {
      const until = partitions?.().coveredUntil;
      if (until === undefined || until === null) this.reset();
      else this.set(Math.max(0, until - Date.now()) / 1000);
    },
  });
  new Gauge({
    name: 'school_database_default_partition_rows',
    help: "Rows in the default partitions at the partitions job's last run (counted up to 1 000; PostgreSQL). Above 0: a period had no partition when they were written, or deliveries on their way were kept past retention.",
    registers: [registry],
    collect() {
      const rows = partitions?.().defaultRows;
      if (rows === undefined || rows === null) this.reset();
      else this.set(rows);
    },
  });
  return {
    watchPartitions(read) {
      partitions = read;
    },
  };
}

/** Retention's last run and the calls it removed. */
function retentionSeries(registry: Registry): Pick<Metrics, 'observeRetention'> {
  const retentionLastRun = new Gauge({
    name: 'school_retention_last_run_timestamp_seconds',
    help: 'When the last retention run finished (it runs at start and daily, on one instance).',
    registers: [registry],
  });
  const retentionRemoved = new Counter({
    name: 'school_retention_removed_calls_total',
    help: "Calls retention removed, with their deliveries and attempts: by whole partitions (PostgreSQL; as estimated) or in batches (SQLite; PostgreSQL's calls from before partitioning and in the default partition).",
    labelNames: ['how'] as const,
    registers: [registry],
  });
  return {
    observeRetention({ at, partitionCalls, batchCalls }) {
      retentionLastRun.set(at / 1000);
      if (partitionCalls > 0) retentionRemoved.inc({ how: 'partition' }, partitionCalls);
      if (batchCalls > 0) retentionRemoved.inc({ how: 'batch' }, batchCalls);
    },
  };
}

/** AuthCodes whose SMS was not queued, by reason. */
function codeRefusalSeries(registry: Registry): Pick<Metrics, 'observeCodeRefused'> {
  const codesRefused = new Counter({
    name: 'school_authcode_refused_total',
    help: 'AuthCode calls whose SMS was not queued, by reason: country and number-type (a destination SMS_ALLOWED_COUNTRIES or the number kinds refuse), range (too many codes to one block of 1 000 numbers: SMS pumping walks them), phone, caller and country-rate (the other limits).',
    labelNames: ['reason'],
    registers: [registry],
  });
  return {
    observeCodeRefused(reason) {
      codesRefused.inc({ reason });
    },
  };
}

/**
 * A provider with each `send` timed into `school_provider_request_duration_seconds`, under
 * `label` (the fallback's is its name with `-fallback`). A send that throws (none should: see
 * providers/types.ts) is counted as `error` and rethrown.
 */
export function instrumentProvider<M>(
  kind: 'sms' | 'push',
  provider: Provider<M>,
  metrics: Pick<Metrics, 'observeProviderRequest'>,
  label: string = provider.name,
): Provider<M> {
  const observe = (outcome: ProviderOutcome, start: bigint) =>
    metrics.observeProviderRequest({
      kind,
      provider: label,
      outcome,
      seconds: Number(process.hrtime.bigint() - start) / 1e9,
    });
  return {
    name: provider.name,
    describe: () => provider.describe(),
    async send(message: M, signal?: AbortSignal): Promise<SendResult> {
      const start = process.hrtime.bigint();
      let result: SendResult;
      try {
        result = await provider.send(message, signal);
      } catch (err) {
        observe('error', start);
        throw err;
      }
      observe(result.ok ? 'sent' : result.kind, start);
      return result;
    },
  };
}
