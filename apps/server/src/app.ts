import { maskQuery } from '@school/asmx';
import { groups, operations } from '@school/contract';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { asmxPlugin } from './asmx/plugin.js';
import { canonicalAsmxUrl } from './asmx/rewrite.js';
import type { Config } from './config.js';
import { corePlugin } from './plugins/core.js';
import { healthRoutes } from './routes/health.js';

const SECRET_PARAMS = operations.flatMap((op) => op.params.filter((p) => p.secret).map((p) => p.name));

export interface BuildOptions {
  /** Pino options or `false`; tests pass `false`. */
  readonly logger?: FastifyServerOptions['logger'];
}

/** Builds the Fastify instance from its plugins; `server.ts` listens, tests call `inject()`. */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger:
      options.logger === undefined
        ? {
            level: config.LOG_LEVEL,
            serializers: {
              // Auth codes never reach the log, not even in a GET binding's query string.
              req: (req) => ({
                method: req.method,
                url: maskQuery(req.url, SECRET_PARAMS),
                host: req.host,
                remoteAddress: req.ip,
              }),
            },
          }
        : options.logger,
    trustProxy:
      typeof config.TRUST_PROXY === 'number'
        ? (_address: string, hop: number) => hop < (config.TRUST_PROXY as number)
        : config.TRUST_PROXY,
    rewriteUrl: (req) => canonicalAsmxUrl(req.url ?? '/'),
    // Bodies are limited per route; this is the ceiling for everything else.
    bodyLimit: config.MAX_BODY_BYTES,
    requestTimeout: 60_000,
    return503OnClosing: true,
  });

  await app.register(corePlugin, { config });
  await app.register(healthRoutes);
  await app.register(asmxPlugin);
  app.log.debug({ groups: groups.map((g) => g.path) }, 'asmx endpoints registered');
  return app;
}
