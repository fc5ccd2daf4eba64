import {
  faultEnvelope,
  parseContentType,
  SOAP_VERSIONS,
  type SoapVersion,
  soapContentType,
  soapVersionOfBinding,
  successEnvelope,
} from '@school/asmx';
import { type GroupDef, groups, type OperationDef } from '@school/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { serveBook } from '../books/serve.js';
import { type CallExchange, recordAndAnswer, runOperation } from '../calls/exchange.js';
import type { Binding, Outcome } from '../store/index.js';

export const TEXT = 'text/plain; charset=utf-8';
export const EMPTY = Buffer.alloc(0);
const SUCCESS_CACHE = 'private, max-age=0';
export const FAULT_CACHE = 'private';

/** An exchange on an `.asmx` endpoint; `unrecorded`: a refusal already recorded once in its window. */
export type AsmxExchange = CallExchange & { readonly unrecorded?: boolean };

/** The part of an exchange known before the operation runs. */
export type ExchangeBase = Pick<CallExchange, 'binding' | 'requestBody'> & {
  readonly group: GroupDef;
  readonly operation?: OperationDef | undefined;
  readonly params?: CallExchange['params'];
};

export function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The SOAP version a request is taken for before its envelope is read
 * (docs/bindings.md#before-the-envelope-is-read).
 */
export function soapBindingOf(request: FastifyRequest): Binding {
  const type = parseContentType(request.headers['content-type']).mediaType;
  return type === 'application/soap+xml' || header(request, 'soapaction') === undefined ? 'soap12' : 'soap11';
}

/** The binding a request on an `.asmx` route speaks, before its body is read. */
export function bindingOf(request: FastifyRequest, kind: 'soap' | 'http' | undefined): Binding {
  if (kind === 'soap') return soapBindingOf(request);
  return request.method === 'GET' || request.method === 'HEAD' ? 'http-get' : 'http-post';
}

export const soapVersionOf = (binding: Binding): SoapVersion | undefined => soapVersionOfBinding(binding);

const fromBase = (base: ExchangeBase) => ({
  binding: base.binding,
  group: base.group.name,
  operation: base.operation?.name ?? null,
  params: base.params ?? null,
  requestBody: base.requestBody,
});

/** A SOAP fault or a plain-text error, whichever the binding speaks (docs/faults.md). */
export function failure(
  base: ExchangeBase,
  outcome: Exclude<Outcome, 'ok'>,
  status: number,
  message: string,
  extraHeaders: Record<string, string> = {},
): AsmxExchange {
  const soap = soapVersionOf(base.binding);
  return {
    ...fromBase(base),
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

/** A plain-text refusal in every binding (a wrong verb, a wrong media type, a refused address). */
export function plainFailure(
  base: ExchangeBase,
  status: number,
  message: string,
  extraHeaders: Record<string, string> = {},
): AsmxExchange {
  const ex = failure(base, 'client-error', status, message, extraHeaders);
  return { ...ex, headers: { ...ex.headers, 'content-type': TEXT }, body: message };
}

/**
 * The `.asmx` doors' side of a call: run the operation (calls/exchange.ts), turn its result into
 * the binding's answer, record, answer.
 */
export function createAsmxAnswers(app: FastifyInstance) {
  const { config } = app;
  // The success envelope depends only on version and operation: built once.
  const successBodies = new Map<string, Buffer>();
  for (const op of groups.flatMap((g) => g.operations)) {
    for (const version of SOAP_VERSIONS) {
      successBodies.set(
        `${version}${op.name}`,
        Buffer.from(successEnvelope(version, op.name, config.SERVICE_NAMESPACE)),
      );
    }
  }

  /** Runs the operation and turns its result into the binding's answer. */
  async function perform(
    base: ExchangeBase,
    op: OperationDef,
    read: (name: string) => string | undefined,
    request: FastifyRequest,
  ): Promise<AsmxExchange> {
    const { params, result } = await runOperation(app, request, op, read);
    const withOp: ExchangeBase = { ...base, operation: op, params };
    if (result.outcome === 'server-error') {
      return failure(
        withOp,
        'server-error',
        500,
        `Server was unable to process request. ---> An internal error occurred (request ${request.id}).`,
      );
    }
    if (result.outcome === 'client-error') {
      return failure(
        withOp,
        'client-error',
        result.status,
        result.message,
        result.retryAfter ? { 'retry-after': String(result.retryAfter) } : {},
      );
    }
    const soap = soapVersionOf(base.binding);
    const ok = {
      ...fromBase(withOp),
      outcome: 'ok' as const,
      error: null,
      deliveries: result.deliveries,
      note: result.note ?? null,
      afterCommit: result.afterCommit,
    };
    if (result.book && !soap) {
      // The HTTP bindings answer with the book itself (docs/wire-contract.md#the-book-answer);
      // SOAP with the empty response.
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

  /** Records the exchange and answers it; without a record, the binding's server error. */
  function finish(
    request: FastifyRequest,
    reply: FastifyReply,
    ex: AsmxExchange,
  ): Promise<FastifyReply> | FastifyReply {
    if (ex.unrecorded) return reply.code(ex.status).headers(ex.headers).send(ex.body);
    return recordAndAnswer(app, request, reply, ex, {
      unrecordable: () => {
        const message =
          'Server was unable to process request. ---> The call could not be recorded; nothing was done.';
        const soap = soapVersionOf(ex.binding);
        return soap
          ? reply
              .code(500)
              .headers({ 'content-type': soapContentType(soap), 'cache-control': FAULT_CACHE })
              .send(faultEnvelope(soap, 'Server', message))
          : reply.code(500).headers({ 'content-type': TEXT, 'cache-control': FAULT_CACHE }).send(message);
      },
    });
  }

  return { perform, finish };
}

export type AsmxAnswers = ReturnType<typeof createAsmxAnswers>;
