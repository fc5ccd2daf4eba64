import type { FastifyPluginAsync } from 'fastify';

/**
 * `GET /healthz`: 200 once the store answers, 503 when it does not (is the process alive?).
 * `GET /readyz`: 200 when the database is reachable with every migration applied and the server
 * is not closing, else 503 (should a load balancer send it calls? docs/operations.md#metrics).
 */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', { config: { anyHost: true } }, async (request, reply) => {
    try {
      await app.store.ping();
      return { status: 'ok' };
    } catch (err) {
      request.log.error({ err }, 'health check failed');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });

  // Set as closing begins, so a check already under way then answers 503 too (new requests get
  // Fastify's own 503: return503OnClosing).
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.get('/readyz', { config: { anyHost: true } }, async (request, reply) => {
    let state = { database: false, migrations: false };
    if (!closing) {
      try {
        state = await app.store.readiness();
      } catch (err) {
        request.log.error({ err }, 'readiness check failed');
      }
    }
    if (!closing && state.database && state.migrations) return { status: 'ready' };
    return reply
      .code(503)
      .send({ status: 'unavailable', database: state.database, migrations: state.migrations });
  });
};
