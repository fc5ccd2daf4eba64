import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import { lazyRequestLogger } from '../http/lazy-logger.js';
import type { ReadinessReport } from '../plugins/readiness.js';
import { PROBE_HEADERS } from '../plugins/security-headers.js';
import type { ReplicaStatus } from '../store/index.js';

/** How often `/healthz` queries the embedded database, at most. */
const PING_EVERY_MS = 1000;

/**
 * The probes (docs/monitoring.md#healthz-and-readyz).
 *
 * `GET /healthz` is liveness: 200 while the process answers at all, whatever the database or the
 * disk (restarting the process mends neither); its body says how they are.
 * `GET /readyz` is readiness: 200 while calls are taken, 503 saying why while they are refused
 * (the database cannot be reached or is not migrated, the disk is nearly full); once the server
 * has begun closing, Fastify answers it (and everything) 503. A load balancer sends calls elsewhere.
 * With a read replica its body says the replica's state (`replica`), which never makes it 503:
 * reads go to the primary meanwhile.
 *
 * Both answer machines: they carry only `nosniff` and `no-store` of the security headers
 * (PROBE_HEADERS), not the console's.
 */
/** The read replica as /readyz says it: its state, its lag in seconds, and why it is not read from. */
function replicaState(replica: ReplicaStatus) {
  return {
    state: replica.state,
    lagSeconds: replica.lagMs === null ? null : Math.round(replica.lagMs / 100) / 10,
    ...(replica.reason ? { reason: replica.reason } : {}),
  };
}

/**
 * A probe's route options: any Host (docs/security.md), a probe's headers, and a logger made only
 * when the probe writes a line (lazyRequestLogger).
 */
const PROBE = {
  config: { anyHost: true, securityHeaders: PROBE_HEADERS },
  childLoggerFactory: lazyRequestLogger,
} as const;

export const healthRoutes: FastifyPluginAsync = async (app) => {
  // The embedded database is always reachable; a query still tells whether it can be read. It is
  // asked at most once per PING_EVERY_MS, however often the probe comes: the answers in between
  // say what the last query found.
  let readable = true;
  let pingedAt = Number.NEGATIVE_INFINITY;
  const ping = async (log: FastifyBaseLogger) => {
    try {
      await app.store.ping();
      readable = true;
    } catch (err) {
      log.error({ err }, 'the database does not answer a query');
      readable = false;
    }
  };
  const answer = (report: ReadinessReport, database: 'up' | 'down') => ({
    status: 'ok',
    database: database === 'up' && !readable ? 'failing' : database,
    disk: report.disk,
  });
  // Answered synchronously but once a second (when it pings): an async handler costs every probe
  // a promise and a turn of the microtask queue.
  app.get('/healthz', PROBE, (request) => {
    const report = app.readiness.report();
    const database = report.database && report.migrations ? 'up' : 'down';
    if (database === 'up' && app.store.dialect === 'sqlite') {
      const now = Date.now();
      if (now - pingedAt >= PING_EVERY_MS) {
        pingedAt = now;
        return ping(request.log).then(() => answer(report, database));
      }
    }
    return answer(report, database);
  });

  // Once closing has begun, Fastify answers every request 503 itself (return503OnClosing).
  app.get('/readyz', PROBE, async (_request, reply) => {
    const report = app.readiness.report();
    const { reasons } = report;
    const state = {
      database: report.database,
      migrations: report.migrations,
      disk: report.disk,
      // Where History, exports, search and the Dashboard read: said, never a reason for 503.
      ...(report.replica ? { replica: replicaState(report.replica) } : {}),
    };
    if (reasons.length === 0) return { status: 'ready', ...state };
    return reply
      .code(503)
      .header('retry-after', '5')
      .send({ status: 'unavailable', ...state, reasons });
  });
};
