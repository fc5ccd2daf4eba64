import type { FastifyPluginAsync } from 'fastify';

/**
 * The probes (docs/monitoring.md#healthz-and-readyz).
 *
 * `GET /healthz` is liveness: 200 while the process answers at all, whatever the database or the
 * disk (restarting the process mends neither); its body says how they are.
 * `GET /readyz` is readiness: 200 while calls are taken, 503 saying why while they are refused
 * (the database cannot be reached or is not migrated, the disk is nearly full); once the server
 * has begun closing, Fastify answers it (and everything) 503. A load balancer sends calls elsewhere.
 */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', { config: { anyHost: true } }, async (request) => {
    const report = app.readiness.report();
    let database: 'up' | 'down' | 'failing' = report.database && report.migrations ? 'up' : 'down';
    if (database === 'up' && app.store.dialect === 'sqlite') {
      // The embedded database is always reachable; a query still tells whether it can be read.
      try {
        await app.store.ping();
      } catch (err) {
        request.log.error({ err }, 'the database does not answer a query');
        database = 'failing';
      }
    }
    return { status: 'ok', database, disk: report.disk };
  });

  // Once closing has begun, Fastify answers every request 503 itself (return503OnClosing).
  app.get('/readyz', { config: { anyHost: true } }, async (_request, reply) => {
    const report = app.readiness.report();
    const { reasons } = report;
    const state = { database: report.database, migrations: report.migrations, disk: report.disk };
    if (reasons.length === 0) return { status: 'ready', ...state };
    return reply
      .code(503)
      .header('retry-after', '5')
      .send({ status: 'unavailable', ...state, reasons });
  });
};
