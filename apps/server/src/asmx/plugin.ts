import type { Readable } from 'node:stream';
import {
  faultEnvelope,
  httpParamReader,
  maskQuery,
  maskRequestBody,
  parseContentType,
  readSoapRequest,
  type SoapVersion,
  soapContentType,
  successEnvelope,
} from '@school/asmx';
import { type GroupDef, groups, maskParams, type OperationDef } from '@school/contract';
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { serveBook } from '../books/serve.js';
import { formatRequest, formatResponse } from '../calls/http-message.js';
import { callRecord } from '../calls/record.js';
import { describeWait, describeWindow, FixedWindow } from '../limits/window.js';
import { ipAllowList } from '../net/ip-allow-list.js';
import { BusyError } from '../plugins/request-limits.js';
import { HELP_PAGE_HEADERS, NO_SECURITY_HEADERS } from '../plugins/security-headers.js';
import type { Binding, NewDelivery, Outcome } from '../store/index.js';
import { createMetadataPages } from './metadata.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The endpoint group an `.asmx` route belongs to, for the plugin's error handler. */
    asmxGroup?: GroupDef;
    asmxKind?: 'soap' | 'http';
  }
}

const ALLOW = 'GET, POST';
const EMPTY = Buffer.alloc(0);
const SUCCESS_CACHE = 'private, max-age=0';
const FAULT_CACHE = 'private';
const TEXT = 'text/plain; charset=utf-8';

/** What one exchange on an `.asmx` endpoint amounts to, for the reply and the call record. */
interface Exchange {
  readonly binding: Binding;
  readonly group: GroupDef;
  readonly operation: OperationDef | undefined;
  /** Parameters as received (secrets masked), or undefined when none could be read. */
  readonly params: Readonly<Record<string, string>> | undefined;
  readonly outcome: Outcome;
  readonly status: number;
  readonly error: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer | Readable | undefined;
  /** The request body as text for the record, secrets masked. */
  readonly requestBody: string;
  /** Deliveries the call queues, committed with its record. */
  readonly deliveries?: readonly NewDelivery[] | undefined;
  /** What the operation did, for the record. */
  readonly note?: string | undefined;
  /** The response body as the record shows it, when it is not text (a PDF). */
  readonly recordedBody?: string;
  /** Work the operation starts only once its record is committed. */
  readonly afterCommit?: (() => void) | undefined;
  /** Answered without a record: a refusal already recorded once in this window. */
  readonly unrecorded?: boolean;
}

/**
 * The `.asmx` endpoints (asmx-compat.md §1): SOAP on `POST /X.asmx`, WSDL, DISCO and help pages
 * on `GET /X.asmx`, the HTTP GET and POST bindings on `/X.asmx/{Op}`. Every operation call, good
 * or bad, is recorded before it is answered. Encapsulated: its body parsing and error handling
 * are its own.
 */
export const asmxPlugin: FastifyPluginAsync = async (app) => {
  const { config, store, operations } = app;
  const namespace = config.SERVICE_NAMESPACE;
  const metadata = createMetadataPages(config);

  // Operation answers go out exactly as ASMX wrote them: no security headers but on help pages.
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, helmet: route.config?.helmet ?? NO_SECURITY_HEADERS };
  });

  // Callers first, before a body is read (docs/security.md): the address allow-list, then the
  // per-address limit on operation calls. A refusal is recorded once per address and minute (or
  // limit window), so a flood cannot fill the disk with records of itself.
  const allowed = config.ASMX_ALLOWED_IPS.length > 0 ? ipAllowList(config.ASMX_ALLOWED_IPS) : undefined;
  const perIp = config.ASMX_LIMIT_PER_IP && new FixedWindow(config.ASMX_LIMIT_PER_IP);
  const refusalsRecorded = new FixedWindow({ max: 1, windowMs: 60_000 });
  app.addHook('onRequest', async (request, reply) => {
    const { asmxGroup: group, asmxKind } = request.routeOptions.config;
    if (allowed && !allowed(request.ip)) {
      const message = `Calls from ${request.ip} are not allowed here.`;
      if (!group) return reply.code(403).type(TEXT).send(message);
      const ex = failure(
        {
          binding: bindingOf(request, asmxKind),
          group,
          operation: undefined,
          params: undefined,
          requestBody: '[body not read]',
        },
        'client-error',
        403,
        message,
      );
      return finish(request, reply, {
        ...ex,
        headers: { ...ex.headers, 'content-type': TEXT },
        body: message,
        unrecorded: !refusalsRecorded.hit(request.ip).ok,
      });
    }
    if (!perIp || !group || asmxKind === undefined) return;
    const hit = perIp.hit(request.ip);
    if (hit.ok) return;
    const { max, windowMs } = perIp.limit;
    const retryAfter = Math.ceil(hit.retryAfterMs / 1000);
    const binding = bindingOf(request, asmxKind);
    const ex = failure(
      { binding, group, operation: undefined, params: undefined, requestBody: '[body not read]' },
      'client-error',
      soapVersionOf(binding) ? 500 : 429,
      `Too many calls from ${request.ip}: at most ${max} per ${describeWindow(windowMs)}. Try again in ${describeWait(hit.retryAfterMs)}.`,
      { 'retry-after': String(retryAfter) },
    );
    return finish(request, reply, {
      ...ex,
      note: 'Later refusals from this address in the same window are not recorded.',
      unrecorded: hit.refusedBefore > 0,
    });
  });

  // Every body arrives as bytes: the bindings decide what they accept and answer in their terms.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: config.MAX_BODY_BYTES }, (_req, body, done) =>
    done(null, body),
  );

  // The success envelope depends only on version and operation: built once.
  const successBodies = new Map<string, Buffer>();
  for (const op of groups.flatMap((g) => g.operations)) {
    for (const version of ['1.1', '1.2'] as const) {
      successBodies.set(`${version}${op.name}`, Buffer.from(successEnvelope(version, op.name, namespace)));
    }
  }
  const secretsByGroup = new Map(
    groups.map((g) => [
      g,
      g.operations.flatMap((op) => op.params.filter((p) => p.secret).map((p) => p.name)),
    ]),
  );
  const secretsOf = (group: GroupDef): readonly string[] => secretsByGroup.get(group) ?? [];

  async function finish(request: FastifyRequest, reply: FastifyReply, ex: Exchange): Promise<FastifyReply> {
    if (ex.unrecorded) return reply.code(ex.status).headers(ex.headers).send(ex.body);
    const bodyText =
      ex.recordedBody ??
      (typeof ex.body === 'string' ? ex.body : Buffer.isBuffer(ex.body) ? ex.body.toString('utf8') : '');
    const url = maskQuery(request.url, secretsOf(ex.group));
    try {
      await store.calls.record(
        callRecord(request, reply, app.diskSpace.recordBytes(), {
          group: ex.group.name,
          operation: ex.operation?.name ?? null,
          binding: ex.binding,
          params: ex.params ?? null,
          outcome: ex.outcome,
          status: ex.status,
          error: ex.error ?? null,
          request: formatRequest(
            request.method,
            url,
            request.raw.httpVersion,
            request.headers,
            ex.requestBody,
          ),
          response: formatResponse(ex.status, ex.headers, bodyText),
          note: ex.note ?? null,
        }),
        ex.deliveries,
      );
    } catch (err) {
      // Without a record nothing may be reported as done (product.md: nothing lost).
      if (ex.body && typeof ex.body === 'object' && 'destroy' in ex.body) ex.body.destroy();
      request.log.error({ err }, 'could not record the call');
      const message =
        'Server was unable to process request. ---> The call could not be recorded; nothing was done.';
      const soap = soapVersionOf(ex.binding);
      return soap
        ? reply
            .code(500)
            .headers({ 'content-type': soapContentType(soap), 'cache-control': FAULT_CACHE })
            .send(faultEnvelope(soap, 'Server', message))
        : reply.code(500).headers({ 'content-type': TEXT, 'cache-control': FAULT_CACHE }).send(message);
    }
    ex.afterCommit?.();
    return reply.code(ex.status).headers(ex.headers).send(ex.body);
  }

  /** A SOAP fault or a plain-text error, whichever the binding speaks. */
  function failure(
    base: Pick<Exchange, 'binding' | 'group' | 'operation' | 'params' | 'requestBody'>,
    outcome: Exclude<Outcome, 'ok'>,
    status: number,
    message: string,
    extraHeaders: Record<string, string> = {},
  ): Exchange {
    const soap = soapVersionOf(base.binding);
    return {
      ...base,
      outcome,
      status,
      error: message,
      headers: {
        'content-type': soap ? soapContentType(soap) : TEXT,
        'cache-control': FAULT_CACHE,
        ...extraHeaders,
      },
      body: soap ? faultEnvelope(soap, outcome === 'client-error' ? 'Client' : 'Server', message) : message,
    };
  }

  /** Runs the operation and turns its result into the binding's answer. */
  async function perform(
    base: Pick<Exchange, 'binding' | 'group' | 'requestBody'>,
    op: OperationDef,
    read: (name: string) => string | undefined,
    request: FastifyRequest,
  ): Promise<Exchange> {
    const received: Record<string, string> = Object.create(null);
    for (const p of op.params) {
      const value = read(p.name);
      if (value !== undefined) received[p.name] = value;
    }
    const withOp = { ...base, operation: op, params: maskParams(op, received) };
    try {
      const result = await operations.run(op, read, { callerIp: request.ip });
      if (result.outcome === 'ok') {
        const soap = soapVersionOf(base.binding);
        const ok = {
          ...withOp,
          params: maskParams(op, result.values),
          outcome: 'ok' as const,
          error: undefined,
          deliveries: result.deliveries,
          note: result.note,
          afterCommit: result.afterCommit,
        };
        if (result.book && !soap) {
          // The HTTP bindings answer with the book itself (product.md); SOAP with the empty response.
          const served = serveBook(config.dataDir, result.book, {
            ifNoneMatch: header(request, 'if-none-match'),
            range: header(request, 'range'),
          });
          return {
            ...ok,
            status: served.status,
            headers: served.headers,
            body: served.body,
            recordedBody: `[${served.summary}]`,
          };
        }
        return {
          ...ok,
          status: 200,
          headers: soap
            ? { 'content-type': soapContentType(soap), 'cache-control': SUCCESS_CACHE }
            : { 'cache-control': SUCCESS_CACHE },
          body: soap ? successBodies.get(`${soap}${op.name}`) : undefined,
        };
      }
      const params = result.values ? maskParams(op, result.values) : withOp.params;
      return failure(
        { ...withOp, params },
        'client-error',
        result.status,
        result.message,
        result.retryAfter ? { 'retry-after': String(result.retryAfter) } : {},
      );
    } catch (err) {
      request.log.error({ err }, 'operation failed');
      return failure(
        withOp,
        'server-error',
        500,
        `Server was unable to process request. ---> An internal error occurred (request ${request.id}).`,
      );
    }
  }

  for (const group of groups) {
    const secrets = secretsOf(group);

    // SOAP 1.1 and 1.2 share the group's path.
    app.post(group.path, { config: { asmxGroup: group, asmxKind: 'soap' } }, async (request, reply) => {
      const parsed = readSoapRequest({
        body: (request.body as Buffer | undefined) ?? EMPTY,
        contentType: request.headers['content-type'],
        soapAction: header(request, 'soapaction'),
        group,
        namespace,
      });
      const requestBody = maskRequestBody(
        parsed.ok || parsed.kind === 'fault' ? (parsed.xml ?? '') : '',
        secrets,
        // Safety net: what the reader took for a secret appears nowhere in the record.
        parsed.ok ? secrets.map((name) => parsed.params.get(name)) : [],
      );
      if (!parsed.ok && parsed.kind === 'unsupported-media-type') {
        const binding = soapBindingOf(request);
        return finish(request, reply, {
          ...failure(
            { binding, group, operation: undefined, params: undefined, requestBody },
            'client-error',
            415,
            parsed.text,
          ),
          headers: { 'content-type': TEXT, 'cache-control': FAULT_CACHE },
          body: parsed.text,
        });
      }
      const binding: Binding = parsed.version === '1.1' ? 'soap11' : 'soap12';
      if (!parsed.ok) {
        const op = parsed.operation;
        return finish(request, reply, {
          binding,
          group,
          operation: op,
          params: undefined,
          requestBody,
          outcome: 'client-error',
          status: 500,
          error: parsed.text,
          headers: { 'content-type': soapContentType(parsed.version), 'cache-control': FAULT_CACHE },
          body: faultEnvelope(parsed.version, parsed.code, parsed.text),
        });
      }
      const { params } = parsed;
      const ex = await perform(
        { binding, group, requestBody },
        parsed.operation,
        (n) => params.get(n),
        request,
      );
      // SOAP faults travel with status 500 whatever the HTTP bindings would have said.
      return finish(request, reply, ex.outcome === 'ok' ? ex : { ...ex, status: 500 });
    });

    app.get(group.path, { config: { helmet: HELP_PAGE_HEADERS } }, (request, reply) =>
      metadata.serve(group, request, reply),
    );

    // The HTTP GET and HTTP POST bindings (asmx-compat.md §4). HEAD is refused below rather than
    // run as a GET: an operation must not act on a HEAD.
    const httpRoute = `${group.path}/:op`;
    const httpConfig = { config: { asmxGroup: group, asmxKind: 'http' as const }, exposeHeadRoute: false };
    for (const binding of ['http-get', 'http-post'] as const) {
      const handler = async (request: FastifyRequest<{ Params: { op: string } }>, reply: FastifyReply) => {
        const name = request.params.op;
        const op = group.operations.find((o) => o.name === name);
        let requestBody = '';
        let entries: Iterable<[string, string]>;
        if (binding === 'http-get') {
          entries = new URLSearchParams(queryOf(request.url));
        } else {
          const body = (request.body as Buffer | undefined) ?? EMPTY;
          requestBody = maskRequestBody(body.toString('utf8'), secrets);
          const type = parseContentType(request.headers['content-type']).mediaType;
          const isForm = type === 'application/x-www-form-urlencoded' || (type === '' && body.length === 0);
          if (op && !isForm) {
            const message = `Request format is invalid: ${request.headers['content-type'] ?? ''}.`;
            return finish(
              request,
              reply,
              failure(
                { binding, group, operation: op, params: undefined, requestBody },
                'client-error',
                415,
                message,
              ),
            );
          }
          entries = new URLSearchParams(body.toString('utf8'));
        }
        if (!op) {
          return finish(
            request,
            reply,
            failure(
              { binding, group, operation: undefined, params: undefined, requestBody },
              'client-error',
              404,
              unknownMethodMessage(group, name),
            ),
          );
        }
        const ex = await perform({ binding, group, requestBody }, op, httpParamReader(entries), request);
        return finish(request, reply, ex);
      };
      if (binding === 'http-get') app.get(httpRoute, httpConfig, handler);
      else app.post(httpRoute, httpConfig, handler);
    }

    // Other verbs: 405 with Allow, recorded like any call.
    const refuse = (kind: 'soap' | 'http') => async (request: FastifyRequest, reply: FastifyReply) => {
      const binding: Binding =
        kind === 'soap' ? soapBindingOf(request) : request.method === 'HEAD' ? 'http-get' : 'http-post';
      const message = `The HTTP verb ${request.method} is not allowed here. Use GET or POST.`;
      const ex = failure(
        { binding, group, operation: undefined, params: undefined, requestBody: '' },
        'client-error',
        405,
        message,
        { allow: ALLOW },
      );
      return finish(request, reply, {
        ...ex,
        headers: { ...ex.headers, 'content-type': TEXT },
        body: message,
      });
    };
    const otherVerbs = ['PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;
    app.route({
      method: [...otherVerbs],
      url: group.path,
      config: { asmxGroup: group },
      handler: refuse('soap'),
    });
    app.route({
      method: [...otherVerbs, 'HEAD'],
      url: httpRoute,
      config: { asmxGroup: group },
      handler: refuse('http'),
    });
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
    const message =
      error.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
        ? `The request body is larger than the limit of ${config.MAX_BODY_BYTES} bytes.`
        : status === 500
          ? `Server was unable to process request. ---> An internal error occurred (request ${request.id}).`
          : `The request could not be read: ${error.message}`;
    if (!group) return reply.code(status).type(TEXT).send(message);
    const binding: Binding =
      request.routeOptions.config.asmxKind === 'soap'
        ? soapBindingOf(request)
        : request.method === 'GET'
          ? 'http-get'
          : 'http-post';
    const requestBody = `[body not read: ${request.headers['content-length'] ?? 'unknown'} bytes]`;
    return finish(
      request,
      reply,
      failure(
        { binding, group, operation: undefined, params: undefined, requestBody },
        status === 500 ? 'server-error' : 'client-error',
        status,
        message,
      ),
    );
  });
};

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The SOAP version a request is taken for before its envelope is read (asmx-compat.md §2.1). */
function soapBindingOf(request: FastifyRequest): Binding {
  const type = parseContentType(request.headers['content-type']).mediaType;
  return type === 'application/soap+xml' || header(request, 'soapaction') === undefined ? 'soap12' : 'soap11';
}

/** The binding a request on an `.asmx` route speaks, before its body is read. */
function bindingOf(request: FastifyRequest, kind: 'soap' | 'http' | undefined): Binding {
  if (kind === 'soap') return soapBindingOf(request);
  return request.method === 'GET' || request.method === 'HEAD' ? 'http-get' : 'http-post';
}

function soapVersionOf(binding: Binding): SoapVersion | undefined {
  return binding === 'soap11' ? '1.1' : binding === 'soap12' ? '1.2' : undefined;
}

function queryOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? '' : url.slice(q + 1);
}

function unknownMethodMessage(group: GroupDef, name: string): string {
  const shown = name.length > 100 ? `${name.slice(0, 100)}…` : name;
  const sameButCase = group.operations.find((o) => o.name.toLowerCase() === name.toLowerCase());
  return sameButCase
    ? `${shown} Web Service method name is not valid. Method names are case-sensitive: did you mean ${sameButCase.name}?`
    : `${shown} Web Service method name is not valid.`;
}
