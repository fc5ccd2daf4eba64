import { type FastifyServerOptions, LogController } from 'fastify';
import fp from 'fastify-plugin';
import pretty from 'pino-pretty';

/**
 * How the log is written (LOG_FORMAT): JSON lines for a log collector, readable lines for a
 * person at a terminal. `auto` reads the terminal from stdout.
 */
export type LogFormat = 'json' | 'pretty';

export function logFormat(
  setting: 'auto' | 'json' | 'pretty',
  isTTY = process.stdout.isTTY === true,
): LogFormat {
  if (setting === 'auto') return isTTY ? 'pretty' : 'json';
  return setting;
}

/**
 * The logger's options for `format`: readable lines (time, level, message, then each field on a
 * line of its own; the set-up URL alone on the line after its message, to be copied whole) written
 * synchronously, so that a line is never lost at exit; JSON lines as pino writes them.
 */
export function loggerOptions(
  format: LogFormat,
): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  if (format === 'json') return {};
  return {
    stream: pretty({
      sync: true,
      colorize: process.stdout.isTTY === true,
      translateTime: 'SYS:HH:MM:ss',
      ignore: 'pid,hostname,setupUrl',
      messageFormat: (log, messageKey) =>
        typeof log.setupUrl === 'string'
          ? `${String(log[messageKey])}\n\n    ${log.setupUrl}\n`
          : String(log[messageKey]),
    }),
  };
}

/**
 * Fastify's log lines, but for its two lines per request (incoming, completed): requestLogPlugin
 * writes one instead. Its error lines stay.
 */
export class RequestLinesOff extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(): void {}
}

/** A request slower than this is worth a line in a person's log (ms). */
export const SLOW_REQUEST_MS = 1000;

/**
 * One line per finished request (Fastify's own two lines per request are off): in JSON mode every
 * request at `info`, for a log collector; in readable mode only what an operator needs at `info`
 * (a server error, a slow request), the rest at `debug` — probes and console assets would bury
 * everything else. Nothing is built for a line the level leaves out (the .asmx path is hot). Being
 * an onResponse hook, it also keeps `reply.elapsedTime` measured, which the call durations and
 * metrics read (Fastify times a reply only for a logger or such a hook).
 */
export const requestLogPlugin = fp<{ readonly format: LogFormat }>(
  async (app, { format }) => {
    app.addHook('onResponse', (request, reply, done) => {
      const ms = reply.elapsedTime;
      const level = format === 'json' || reply.statusCode >= 500 || ms >= SLOW_REQUEST_MS ? 'info' : 'debug';
      const log = request.log as typeof request.log & { isLevelEnabled?: (level: string) => boolean };
      if (log.isLevelEnabled?.(level)) {
        log[level](
          { req: request, res: { statusCode: reply.statusCode }, responseTime: Math.round(ms) },
          'request completed',
        );
      }
      done();
    });
  },
  { name: 'request-log' },
);

/**
 * What a person starting the server at a terminal is told once it listens: where the console and
 * the services are, and where the data is kept (the log's `ready` line says the same as JSON).
 */
export function readyBanner(options: {
  readonly baseUrl: string;
  readonly services: readonly { readonly title: string; readonly path: string }[];
  readonly dataDir: string;
  /** The first admin's set-up URL, while no staff user exists (auth/first-admin.ts). */
  readonly setupUrl?: string | undefined;
}): string {
  const width = Math.max(...options.services.map((s) => s.title.length), 'Console'.length);
  return [
    '',
    'School Messaging and Book Service is ready',
    `  ${'Console'.padEnd(width)}  ${options.baseUrl}/`,
    ...options.services.map((s) => `  ${s.title.padEnd(width)}  ${options.baseUrl}${s.path}`),
    `  ${'Data'.padEnd(width)}  ${options.dataDir}`,
    ...(options.setupUrl
      ? [
          '',
          'No staff user exists yet. Open this link within an hour to create the first admin:',
          `  ${options.setupUrl}`,
        ]
      : []),
    '',
  ].join('\n');
}
