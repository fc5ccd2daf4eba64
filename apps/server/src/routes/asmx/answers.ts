import {
  faultEnvelope,
  httpErrorBody,
  parseContentType,
  SOAP_VERSIONS,
  type SoapRefusal,
  type SoapVersion,
  soapContentType,
  soapRefusalAnswer,
  soapVersionOfBinding,
  successEnvelope,
} from '@school/asmx';
import { type GroupDef, groups, type OperationDef } from '@school/contract';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BookBlobs } from '../../books/blobs.js';
import { serveBook } from '../../books/serve.js';
import { header } from '../../http/headers.js';
import type { OperationResult } from '../../operations/run.js';
import { type CallExchange, canonicalResponseOf } from '../../recording/exchange.js';
import type { Binding, Outcome } from '../../store/index.js';

export const TEXT = 'text/plain; charset=utf-8';
export const EMPTY = Buffer.alloc(0);
const SUCCESS_CACHE = 'private, max-age=0';
/** A success answer's headers over SOAP, by version, and over HTTP GET/POST (shared, frozen). */
const successHeaders = (soap: SoapVersion | undefined): Readonly<Record<string, string>> => {
  const headers: Record<string, string> = soap ? { 'content-type': soapContentType(soap) } : {};
  headers['cache-control'] = SUCCESS_CACHE;
  return Object.freeze(headers);
};
const SUCCESS_HEADERS = new Map(SOAP_VERSIONS.map((v) => [v, successHeaders(v)]));
const HTTP_SUCCESS_HEADERS = successHeaders(undefined);
export const FAULT_CACHE = 'private';

/**
 * A call's answer on an `.asmx` endpoint, with what its record keeps; `unrecorded`: a refusal
 * already recorded once in its window, answered without a record.
 */
export type AsmxExchange = CallExchange & { readonly unrecorded?: boolean };

/** The part of an exchange known before the operation runs. */
export type ExchangeBase = Pick<CallExchange, 'binding' | 'requestBody' | 'secretValues'> & {
  readonly group: GroupDef;
  readonly operation?: OperationDef | undefined;
  readonly params?: CallExchange['params'];
};

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
  secretValues: base.secretValues,
});

export interface FailureOptions {
  /** What the caller is told, when it is not the reason itself (ASMX's terser text). */
  readonly text?: string;
  readonly headers?: Record<string, string>;
  /** What the record says of the call besides its error. */
  readonly note?: string;
  /** A refusal already recorded once in its window: answered without a record. */
  readonly unrecorded?: boolean;
}

/**
 * A SOAP fault or a plain-text error, whichever the binding speaks (docs/faults.md). `reason` is
 * what the record keeps (History, the call page); the caller gets `options.text` when given.
 * A `500` over HTTP GET/POST is written as ASMX wrote its exceptions: the text, then CRLF.
 */
export function failure(
  base: ExchangeBase,
  outcome: Exclude<Outcome, 'ok'>,
  status: number,
  reason: string,
  options: FailureOptions = {},
): AsmxExchange {
  const soap = soapVersionOf(base.binding);
  const text = options.text ?? reason;
  return {
    ...fromBase(base),
    outcome,
    status,
    error: reason,
    note: options.note ?? null,
    unrecorded: options.unrecorded,
    headers: {
      'content-type': soap ? soapContentType(soap) : TEXT,
      'cache-control': FAULT_CACHE,
      ...options.headers,
    },
    body: soap
      ? faultEnvelope(soap, outcome === 'client-error' ? 'Client' : 'Server', text)
      : status === 500
        ? httpErrorBody(text)
        : text,
  };
}

/** A plain-text refusal in every binding (a wrong verb, a refused address): ours, not ASMX's. */
export function plainFailure(
  base: ExchangeBase,
  status: number,
  message: string,
  options: Pick<FailureOptions, 'headers' | 'unrecorded'> = {},
): AsmxExchange {
  return {
    ...fromBase(base),
    outcome: 'client-error',
    status,
    error: message,
    note: null,
    unrecorded: options.unrecorded,
    headers: { 'content-type': TEXT, 'cache-control': FAULT_CACHE, ...options.headers },
    body: message,
  };
}

const EMPTY_BODY_NOTES: Record<number, string> = {
  400: 'Answered 400 with an empty body, as ASMX answered a request whose XML it could not read.',
  415: 'Answered 415 with an empty body, as ASMX answered a media type it did not take.',
};

/**
 * A SOAP request the codec refused (docs/faults.md#soap-faults-by-case): a `500` fault, or ASMX's
 * `400`/`415` with an empty body. The record keeps the precise reason either way.
 */
export function soapRefusal(base: ExchangeBase, refusal: SoapRefusal): AsmxExchange {
  const answer = soapRefusalAnswer(refusal);
  return {
    ...fromBase(base),
    outcome: 'client-error',
    status: answer.status,
    error: refusal.text,
    note: EMPTY_BODY_NOTES[answer.status] ?? null,
    headers: { 'content-type': answer.contentType, 'cache-control': FAULT_CACHE },
    body: answer.body,
  };
}

/** The answer of an operation that ran, in its binding: built from its result, once. */
export type OperationAnswer = (
  base: ExchangeBase & { readonly operation: OperationDef },
  result: OperationResult,
  request: FastifyRequest,
) => AsmxExchange;

/**
 * The answers of the operations that ran, in each binding (docs/faults.md, docs/wire-contract.md):
 * the success envelope of each operation and SOAP version built once, the book served over HTTP
 * GET/POST, a refusal or a server error as a fault or ASMX's plain text.
 */
export function createOperationAnswer(namespace: string, bookBlobs: BookBlobs): OperationAnswer {
  // The success envelope depends only on version and operation: built once, with its record's
  // text (an answer recorded by reference: recording/exchange.ts).
  const successBodies = new Map<string, Buffer>();
  const successRecords = new Map<string, string>();
  for (const op of groups.flatMap((g) => g.operations)) {
    for (const version of SOAP_VERSIONS) {
      const body = Buffer.from(successEnvelope(version, op.name, namespace));
      successBodies.set(`${version}${op.name}`, body);
      successRecords.set(
        `${version}${op.name}`,
        canonicalResponseOf(200, SUCCESS_HEADERS.get(version) ?? {}, body),
      );
    }
  }
  // Over HTTP GET/POST a success but a book's has no body: one text for every operation.
  const httpSuccessRecord = canonicalResponseOf(200, HTTP_SUCCESS_HEADERS, undefined);

  return (base, result, request) => {
    const op = base.operation;
    if (result.outcome === 'server-error') {
      return {
        ...failure(
          { ...base, params: result.params },
          'server-error',
          500,
          `Server was unable to process request. ---> An internal error occurred (request ${request.id}).`,
        ),
        schoolId: result.schoolId,
      };
    }
    const soap = soapVersionOf(base.binding);
    if (result.outcome === 'client-error') {
      // Over SOAP every refusal is a 500 Client fault. Over HTTP GET/POST a parameter left out is
      // ASMX's own refusal, a 500 with its text; the others are ours and keep their 4xx
      // (docs/faults.md#the-operations-own-refusals).
      return {
        ...failure(
          { ...base, params: result.params },
          'client-error',
          soap || result.absent ? 500 : result.status,
          result.message,
          result.retryAfter ? { headers: { 'retry-after': String(result.retryAfter) } } : {},
        ),
        schoolId: result.schoolId,
      };
    }
    // The success answer of every call: one object literal, no spreads (spreading the exchange
    // over was a measurable part of the CPU under load: docs/performance.md).
    let status = 200;
    let headers = (soap && SUCCESS_HEADERS.get(soap)) || HTTP_SUCCESS_HEADERS;
    const key = soap ? `${soap}${op.name}` : '';
    let body: AsmxExchange['body'] = soap ? successBodies.get(key) : undefined;
    let recordedBody: string | undefined;
    // The same text for every call of the operation in this binding: recorded by reference.
    let canonicalResponse = soap ? successRecords.get(key) : httpSuccessRecord;
    if (result.book && !soap) {
      // The HTTP bindings answer with the book itself (docs/wire-contract.md#the-book-answer);
      // SOAP with the empty response.
      const served = serveBook(bookBlobs, result.book, {
        ifNoneMatch: header(request, 'if-none-match'),
        range: header(request, 'range'),
      });
      ({ status, headers, body } = served);
      // Not the same for every call: the book, its size, the range served.
      recordedBody = `[${served.summary}]`;
      canonicalResponse = undefined;
    }
    return {
      binding: base.binding,
      group: base.group.name,
      operation: op.name,
      params: result.params,
      requestBody: base.requestBody,
      secretValues: base.secretValues,
      outcome: 'ok',
      error: null,
      deliveries: result.deliveries,
      note: result.note ?? null,
      afterCommit: result.afterCommit,
      schoolId: result.schoolId,
      status,
      headers,
      body,
      recordedBody,
      canonicalResponse,
    };
  };
}

/** Retry-After when a call found the database away or the disk full as it was recorded. */
const UNAVAILABLE_RETRY_AFTER_S = 5;

/**
 * The answer when a call could not be recorded: nothing may be reported as done. The database
 * away or the disk full (`unavailable`): the caller is told to try again (answerUnavailable);
 * otherwise the binding's server error.
 */
export function answerUnrecorded(reply: FastifyReply, binding: Binding, unavailable: boolean): FastifyReply {
  if (unavailable) return answerUnavailable(reply, binding, UNAVAILABLE_RETRY_AFTER_S);
  const message =
    'Server was unable to process request. ---> The call could not be recorded; nothing was done.';
  const soap = soapVersionOf(binding);
  return soap
    ? reply
        .code(500)
        .headers({ 'content-type': soapContentType(soap), 'cache-control': FAULT_CACHE })
        .send(faultEnvelope(soap, 'Server', message))
    : reply
        .code(500)
        .headers({ 'content-type': TEXT, 'cache-control': FAULT_CACHE })
        .send(httpErrorBody(message));
}

/**
 * The answer while calls cannot be taken (docs/monitoring.md#faults):
 * nothing was done and nothing recorded. SOAP: a `500` Server/Receiver fault, as ASMX answered a
 * failure inside the server, so every SOAP client reads it; HTTP GET/POST: `503` in plain text.
 * Both carry `Retry-After`. Its words say nothing of the cause: the log and /readyz do.
 */
export function answerUnavailable(
  reply: FastifyReply,
  binding: Binding,
  retryAfterSeconds: number,
): FastifyReply {
  const soap = soapVersionOf(binding);
  const retry = String(retryAfterSeconds);
  if (soap) {
    return reply
      .code(500)
      .headers({ 'content-type': soapContentType(soap), 'cache-control': FAULT_CACHE, 'retry-after': retry })
      .send(faultEnvelope(soap, 'Server', `Server was unable to process request. ---> ${UNAVAILABLE_TEXT}`));
  }
  return reply
    .code(503)
    .headers({ 'content-type': TEXT, 'cache-control': FAULT_CACHE, 'retry-after': retry })
    .send(UNAVAILABLE_TEXT);
}

export const UNAVAILABLE_TEXT =
  'The service is temporarily unavailable; nothing was done. Try again in a few seconds.';
