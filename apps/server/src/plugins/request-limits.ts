import { Transform } from 'node:stream';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route streams its body to disk rather than holding it (book uploads): not budgeted. */
    streamsBody?: boolean;
  }
}

/** Too many bytes being received at once: the request is refused with 503, never recorded. */
export class BusyError extends Error {
  readonly statusCode = 503;
  readonly code = 'SERVER_BUSY';
  constructor() {
    super('The server is busy receiving other requests. Try again in a few seconds.');
  }
}

const BUSY_LOG_MS = 10_000;

/**
 * What one caller can make the server hold (docs/security.md): connections at once
 * (MAX_CONNECTIONS), bytes of bodies being received at once across all requests
 * (MAX_INFLIGHT_BODY_BYTES: a request that would go over is refused with 503 before its body is
 * read). The disk is disk-space.ts's.
 */
export const requestLimitsPlugin = fp(
  async (app) => {
    const { config } = app;
    app.server.maxConnections = config.MAX_CONNECTIONS;

    // --- bodies being received ---------------------------------------------------------------
    const budget = config.MAX_INFLIGHT_BODY_BYTES;
    let inFlight = 0;
    let refusedSinceLog = 0;
    let lastLog = 0;
    // Both hooks are synchronous (callback style): an async hook costs every request a promise
    // and a turn of the microtask queue, whether or not it has a body.
    app.addHook('onRequest', (request, reply, done) => {
      // Most requests declare no body (every GET): nothing to count, the route's options unread.
      const length = request.headers['content-length'];
      if (length === undefined || request.routeOptions.config.streamsBody) return done();
      const declared = Number(length);
      if (!Number.isFinite(declared) || declared <= 0) return done();
      if (inFlight + declared > budget) {
        refusedSinceLog++;
        const now = Date.now();
        if (now - lastLog > BUSY_LOG_MS) {
          request.log.warn(
            { refused: refusedSinceLog, inFlightBytes: inFlight, budget },
            'request bodies refused: too many bytes being received at once (MAX_INFLIGHT_BODY_BYTES)',
          );
          lastLog = now;
          refusedSinceLog = 0;
        }
        // Answered here: the request goes no further (done is not called).
        reply
          .code(503)
          .headers({ 'retry-after': '5', connection: 'close', 'content-type': 'text/plain; charset=utf-8' })
          .send('The server is busy receiving other requests. Try again in a few seconds.');
        return;
      }
      inFlight += declared;
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        inFlight -= declared;
      };
      // Held until the exchange is over, answered or cut off.
      reply.raw.once('close', release);
      reply.raw.once('finish', release);
      done();
    });

    // A body without a declared length (chunked) is counted as it arrives instead.
    app.addHook('preParsing', (request, reply, payload, done) => {
      // Only a body sent in chunks is counted here; without one the request is left alone (piping
      // it would end it, and a live tail with it).
      const chunked =
        request.headers['transfer-encoding'] !== undefined && request.headers['content-length'] === undefined;
      if (!chunked || request.routeOptions.config.streamsBody) return done(null, payload);
      let counted = 0;
      reply.raw.once('close', () => {
        inFlight -= counted;
        counted = 0;
      });
      const counter = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          if (inFlight + chunk.length > budget) {
            callback(new BusyError());
            return;
          }
          inFlight += chunk.length;
          counted += chunk.length;
          callback(null, chunk);
        },
      });
      payload.on('error', (err) => counter.destroy(err));
      // Fastify checks its body limits on this count.
      done(
        null,
        Object.assign(payload.pipe(counter), {
          get receivedEncodedLength() {
            return counted;
          },
        }),
      );
    });
  },
  { name: 'request-limits', dependencies: ['config'] },
);
