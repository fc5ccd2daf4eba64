import type { FastifyPluginAsync } from 'fastify';

/** `GET /healthz`: 200 once the store answers, 503 when it does not. */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', async (request, reply) => {
    try {
      await app.store.ping();
      return { status: 'ok' };
    } catch (err) {
      request.log.error({ err }, 'health check failed');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });
};
