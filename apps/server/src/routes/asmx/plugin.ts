import { type GroupDef, groups } from '@school/contract';
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import { BusyError } from '../../plugins/request-limits.js';
import { HELP_PAGE_HEADERS, NO_SECURITY_HEADERS } from '../../plugins/security-headers.js';
import { answerUnavailable, bindingOf, failure, TEXT } from './answers.js';
import { checkCallers } from './callers.js';
import { createExchange } from './exchange.js';
import { registerHttpRoutes } from './http-bindings.js';
import { createMetadataPages } from './metadata.js';
import { registerSoapRoute } from './soap.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The endpoint group an `.asmx` route belongs to, for the plugin's error handler. */
    asmxGroup?: GroupDef;
    asmxKind?: 'soap' | 'http';
  }
}

/**
 * The `.asmx` endpoints (docs/wire-contract.md#paths-and-methods): SOAP on `POST /X.asmx`
 * (soap.ts), WSDL, DISCO and help pages on `GET /X.asmx` (metadata.ts), the HTTP GET and POST
 * bindings on `/X.asmx/{Op}` (http-bindings.ts). Each route reads its request and hands the call
 * to the exchange (exchange.ts), which runs it, answers it in its binding (answers.ts) and records
 * it before the answer goes: every operation call, good or bad. Encapsulated: its body parsing
 * and error handling are its own.
 */
export const asmxRoutes: FastifyPluginAsync = async (app) => {
  const { config } = app;
  const exchange = createExchange(app);
  const metadata = createMetadataPages(config);

  // Operation answers go out exactly as ASMX wrote them: no security headers but on help pages.
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, securityHeaders: route.config?.securityHeaders ?? NO_SECURITY_HEADERS };
  });
  checkCallers(app, exchange);
  // Calls the service cannot take now (the database away, the disk nearly full) are refused
  // before their body is read, and not recorded: nothing could be written.
  // (A callback hook: no promise per request on the hot path.)
  app.addHook('onRequest', (request, reply, done) => {
    const { asmxGroup, asmxKind } = request.routeOptions.config;
    const refusal = asmxGroup && asmxKind !== undefined ? app.readiness.refusal() : null;
    if (!refusal || asmxKind === undefined) return done();
    app.metrics.observeRefusal(refusal.cause);
    answerUnavailable(reply, bindingOf(request, asmxKind), refusal.retryAfterSeconds);
  });

  // Every body arrives as bytes: the bindings decide what they accept and answer in their terms.
  // Capped at ASMX_MAX_BODY_BYTES, announced or counted as it arrives (chunked): an operation
  // takes a few short strings, and every byte read is parsed, masked and recorded.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: config.ASMX_MAX_BODY_BYTES },
    (_req, body, done) => done(null, body),
  );

  for (const group of groups) {
    registerSoapRoute(app, group, exchange);
    app.get(group.path, { config: { securityHeaders: HELP_PAGE_HEADERS } }, (request, reply) =>
      metadata.serve(group, request, reply),
    );
    registerHttpRoutes(app, group, exchange);
  }

  // Errors before a handler ran (an oversized or unreadable body), and anything unexpected.
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    // Overload, not the caller's doing: answered at once, not recorded (docs/security.md).
    if (error instanceof BusyError) {
      return reply
        .code(503)
        .headers({ 'retry-after': '5', connection: 'close', 'content-type': TEXT })
        .send(error.message);
    }
    const group = request.routeOptions.config.asmxGroup;
    const status =
      error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) request.log.error({ err: error }, 'unexpected error on an .asmx endpoint');
    const tooLarge = error.code === 'FST_ERR_CTP_BODY_TOO_LARGE';
    // The rest of an oversized body is not read: the connection closes once this is answered.
    if (tooLarge) reply.header('connection', 'close');
    const message = tooLarge
      ? `The request body is larger than the limit of ${config.ASMX_MAX_BODY_BYTES} bytes.`
      : status === 500
        ? `Server was unable to process request. ---> An internal error occurred (request ${request.id}).`
        : `The request could not be read: ${error.message}`;
    if (!group) return reply.code(status).type(TEXT).send(message);
    const kind = request.routeOptions.config.asmxKind;
    // A body too large for a GET route is a POST's: the error handler sees the method it came with.
    const binding =
      kind === 'soap' ? bindingOf(request, kind) : request.method === 'GET' ? 'http-get' : 'http-post';
    const requestBody = `[body not read: ${request.headers['content-length'] ?? 'unknown'} bytes]`;
    return exchange(
      request,
      reply,
      failure(
        { binding, group, requestBody },
        status === 500 ? 'server-error' : 'client-error',
        status,
        message,
      ),
    );
  });
};
