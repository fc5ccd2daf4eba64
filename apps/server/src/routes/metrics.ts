import type { FastifyPluginAsync } from 'fastify';
import { lazyRequestLogger } from '../http/lazy-logger.js';
import { ipAllowList } from '../net/ip-allow-list.js';
import { PROBE_HEADERS } from '../plugins/security-headers.js';

/**
 * `GET /metrics`, for the addresses in METRICS_ALLOWED_IPS only (docs/monitoring.md#metrics):
 * registered after the auth plugin, like every route, so it is in the route table. A scraper
 * reads it, not a browser: only `nosniff` and `no-store` of the security headers (PROBE_HEADERS),
 * and a logger made only when it writes a line (lazyRequestLogger).
 */
export const metricsRoutes: FastifyPluginAsync = async (app) => {
  const ranges = app.config.METRICS_ALLOWED_IPS;
  const allowed = ranges === null ? () => true : ipAllowList(ranges);
  app.get(
    '/metrics',
    {
      config: { access: 'public', anyHost: true, securityHeaders: PROBE_HEADERS },
      childLoggerFactory: lazyRequestLogger,
    },
    async (request, reply) => {
      if (!allowed(request.ip)) {
        return reply
          .code(403)
          .type('text/plain; charset=utf-8')
          .send('Metrics are not served to this address (see METRICS_ALLOWED_IPS).');
      }
      const text = await app.metrics.scrape();
      return reply.type(app.metrics.registry.contentType).send(text);
    },
  );
};
