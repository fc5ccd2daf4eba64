import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { maskRequestText } from '@school/asmx';
import { groups, secretParamNames } from '@school/contract';
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { authPlugin, withAccess } from './auth/plugin.js';
import { bookBlobsPlugin } from './books/plugin.js';
import { type Config, configPlugin } from './config.js';
import { type LogFormat, loggerOptions, RequestLinesOff, requestLogPlugin } from './logging.js';
import { diskSpacePlugin } from './plugins/disk-space.js';
import { historyPlugin } from './plugins/history.js';
import { metricsPlugin } from './plugins/metrics.js';
import { operationsPlugin } from './plugins/operations.js';
import { outboxPlugin } from './plugins/outbox.js';
import { outboxMetricsPlugin } from './plugins/outbox-metrics.js';
import { partitionsPlugin } from './plugins/partitions.js';
import { providersPlugin } from './plugins/providers.js';
import { readinessPlugin } from './plugins/readiness.js';
import { recordingPlugin } from './plugins/recording.js';
import { requestLimitsPlugin } from './plugins/request-limits.js';
import { retentionPlugin } from './plugins/retention.js';
import { secretsPlugin } from './plugins/secrets.js';
import { securityHeadersPlugin } from './plugins/security-headers.js';
import { statsPlugin } from './plugins/stats.js';
import { storePlugin } from './plugins/store.js';
import { apiRoutes } from './routes/api/plugin.js';
import { asmxRoutes } from './routes/asmx/plugin.js';
import { canonicalAsmxUrl } from './routes/asmx/rewrite.js';
import { consoleRoutes } from './routes/console.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { twilioStatusRoutes } from './routes/twilio-status.js';

const SECRET_PARAMS = secretParamNames();

/**
 * Log serializers: auth codes never reach the log, not in a query string nor in a path parameter,
 * whatever the spelling (docs/security.md#what-is-masked-and-where).
 */
export const logSerializers = {
  req: (req: FastifyRequest) => ({
    method: req.method,
    url: maskRequestText(req.url, SECRET_PARAMS),
    host: req.host,
    remoteAddress: req.ip,
  }),
};

/** A request id a proxy may pass on (nginx's `$request_id`, a load balancer's trace id). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The id a request is logged, recorded and answered under: the proxy's `X-Request-Id` when it is
 * a plausible id, else a UUID. Fastify's default (`req-1`, `req-2`, …) counts per process, so it
 * repeats across instances and restarts and could not name one call in a shared log or History.
 */
export function requestId(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

export interface BuildOptions {
  /** Pino options (our serializers are always applied), or `false` for no logging. */
  readonly logger?: false | Exclude<FastifyServerOptions['logger'], boolean | undefined>;
  /**
   * A problem no retry mends, found after start (PostgreSQL refused DATABASE_URL's credentials
   * once it could be reached): the process owner stops (server.ts exits non-zero). Default: logged.
   */
  readonly onFatal?: (err: Error) => void;
  /**
   * Roll up the calls for the Dashboard in the background (plugins/stats.ts). Tests that
   * record calls at chosen past times turn it off, so an hour is never rolled up before they
   * have written into it; the roll-ups have tests of their own.
   */
  readonly rollups?: boolean;
  /** How the log is written (src/logging.ts); JSON unless said. */
  readonly logFormat?: LogFormat;
}

/** Builds the Fastify instance from its plugins; `server.ts` listens, tests call `inject()`. */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger:
      options.logger === false
        ? false
        : {
            level: config.LOG_LEVEL,
            ...loggerOptions(options.logFormat ?? 'json'),
            ...options.logger,
            serializers: logSerializers,
          },
    // One line per request instead, and not for every request on a terminal (requestLogPlugin).
    logController: new RequestLinesOff(),
    trustProxy:
      typeof config.TRUST_PROXY === 'number'
        ? (_address: string, hop: number) => hop < (config.TRUST_PROXY as number)
        : config.TRUST_PROXY,
    rewriteUrl: (req) => canonicalAsmxUrl(req.url ?? '/'),
    genReqId: requestId,
    // Bodies are limited per route; this is the ceiling for everything else.
    bodyLimit: config.MAX_BODY_BYTES,
    requestTimeout: 60_000,
    return503OnClosing: true,
  });

  await app.register(configPlugin, { config });
  await app.register(requestLogPlugin, { format: options.logFormat ?? 'json' });
  await app.register(metricsPlugin);
  await app.register(diskSpacePlugin);
  await app.register(secretsPlugin);
  await app.register(providersPlugin);
  // The write path in one direction: the store, the outbox on it, the recorder on both. Closing
  // runs in reverse: pending records are committed, then the attempts under way finish, then the
  // database closes.
  await app.register(storePlugin, { onFatal: options.onFatal });
  await app.register(readinessPlugin);
  await app.register(bookBlobsPlugin);
  await app.register(outboxPlugin);
  await app.register(historyPlugin);
  await app.register(recordingPlugin);
  await app.register(statsPlugin, { rollUp: options.rollups !== false });
  await app.register(outboxMetricsPlugin);
  await app.register(operationsPlugin);
  await app.register(partitionsPlugin);
  await app.register(retentionPlugin);
  // Before any route: their hooks see every route registered and every request.
  await app.register(requestLimitsPlugin);
  await app.register(securityHeadersPlugin);
  await app.register(authPlugin);
  // Who may call what: the .asmx endpoints are open (the interface has no credential; see
  // ASMX_ALLOWED_IPS), Twilio's callbacks are signed, the console's files are its login page
  // too; the API sets its rules per group.
  await app.register(withAccess('public', healthRoutes));
  // Answered only to METRICS_ALLOWED_IPS (docs/monitoring.md#metrics).
  await app.register(withAccess('public', metricsRoutes));
  await app.register(withAccess('public', asmxRoutes));
  await app.register(apiRoutes, { prefix: '/api' });
  await app.register(withAccess('public', twilioStatusRoutes));
  await app.register(withAccess('public', consoleRoutes), { root: config.consoleDir });
  app.log.debug({ groups: groups.map((g) => g.path) }, 'asmx endpoints registered');
  return app;
}
