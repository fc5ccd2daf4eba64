import fp from 'fastify-plugin';
import type { ReplicaStatus } from '../store/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Whether new calls can be taken now, and why not (docs/monitoring.md#faults). */
    readonly readiness: Readiness;
  }
}

/** Why new calls are refused now: `database` unreachable (or not yet migrated), `disk` nearly full. */
export interface Refusal {
  readonly cause: 'database' | 'disk';
  /** For the operator (/readyz, the log), not for callers: it may name the database's error. */
  readonly reason: string;
  /** What callers are told to wait before trying again. */
  readonly retryAfterSeconds: number;
}

export interface ReadinessReport {
  readonly ready: boolean;
  readonly database: boolean;
  readonly migrations: boolean;
  readonly disk: 'ok' | 'low' | 'nearly full' | 'full' | 'unchecked';
  /** Each reason calls are refused, in words. */
  readonly reasons: readonly string[];
  /**
   * The read replica (DATABASE_READ_URL), when there is one: `ok` (History, exports, search and the
   * Dashboard read from it), `lagging` or `down` (they read from the primary). Never a reason to
   * refuse calls.
   */
  readonly replica?: ReplicaStatus;
}

export interface Readiness {
  /** The first reason new calls are refused now, or null when they are taken. */
  refusal(): Refusal | null;
  /** Everything /readyz and /healthz say. */
  report(): ReadinessReport;
}

/** A database away is usually back within seconds (a restart, a failover). */
const DATABASE_RETRY_AFTER_S = 5;
/** A full disk waits for someone to free space. */
const DISK_RETRY_AFTER_S = 30;

/**
 * One answer to "can a call be taken now?", for the doors (the .asmx endpoints and the console's
 * Send refuse before anything is written: SOAP a 500 fault, the others 503), /readyz (a load balancer sends calls
 * elsewhere) and the metrics. Two things make it no: the database cannot be reached or is not yet
 * migrated (store/availability.ts), and the disk is nearly full (disk-space.ts).
 */
export const readinessPlugin = fp(
  async (app) => {
    const { store, diskSpace, metrics } = app;
    const refusal = (): Refusal | null => {
      const db = store.readiness();
      if (!db.database || !db.migrations) {
        return {
          cause: 'database',
          reason: db.status.reason ?? 'the database migrations are not applied yet',
          retryAfterSeconds: DATABASE_RETRY_AFTER_S,
        };
      }
      if (diskSpace.refusing()) {
        const disk = diskSpace.status();
        const free = Math.floor((disk.freeBytes ?? 0) / 1048576);
        return {
          cause: 'disk',
          reason: disk.full
            ? `the disk is full: a write failed (${free} MB free)`
            : `the disk is nearly full: ${free} MB free, below REFUSE_FREE_DISK_MB`,
          retryAfterSeconds: DISK_RETRY_AFTER_S,
        };
      }
      return null;
    };
    const readiness: Readiness = {
      refusal,
      report() {
        const db = store.readiness();
        const disk = diskSpace.status();
        const reasons: string[] = [];
        if (!db.database || !db.migrations)
          reasons.push(`database: ${db.status.reason ?? 'the database migrations are not applied yet'}`);
        if (disk.full) reasons.push('disk: full (a write failed)');
        else if (disk.refusingCalls) reasons.push('disk: nearly full (below REFUSE_FREE_DISK_MB)');
        return {
          ...(store.replica ? { replica: store.replica.status() } : {}),
          ready: reasons.length === 0,
          database: db.database,
          migrations: db.migrations,
          disk: disk.full
            ? 'full'
            : disk.freeBytes === null
              ? 'unchecked'
              : disk.refusingCalls
                ? 'nearly full'
                : disk.rawBodiesStored
                  ? 'ok'
                  : 'low',
          reasons,
        };
      },
    };
    app.decorate('readiness', readiness);
    metrics.watchReadiness(readiness, diskSpace);
  },
  { name: 'readiness', dependencies: ['store', 'disk-space', 'metrics'] },
);
