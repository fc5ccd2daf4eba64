import {
  httpParamReader,
  invalidMethodNameText,
  methodNameCaseText,
  parseContentType,
  requestFormatText,
} from '@school/asmx';
import type { GroupDef } from '@school/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Binding } from '../../store/index.js';
import { type AsmxExchange, EMPTY, failure, plainFailure, soapBindingOf } from './answers.js';
import type { Exchange } from './exchange.js';

const ALLOW = 'GET, POST';

/**
 * ASP.NET's limit on a form's fields (MaxHttpCollectionKeys, 1 000 since MS11-100): past it,
 * reading the form threw, and ASMX answered with the exception's message. An operation takes at
 * most three; a form of thousands is only work for the server (docs/faults.md).
 */
const MAX_FORM_FIELDS = 1000;
const TOO_MANY_FIELDS_TEXT = 'Operation is not valid due to the current state of the object.';

/** What the record keeps of a form refused for its fields: its first 4 KiB, then how much more. */
function headOf(text: string): string {
  const HEAD = 4096;
  return text.length <= HEAD
    ? text
    : `${text.slice(0, HEAD)}[… ${text.length - HEAD} more characters not recorded]`;
}

/** Whether a form-encoded text has more than `max` fields, counted by their separators. */
function fieldsOver(text: string, max: number): boolean {
  let fields = 1;
  for (let at = text.indexOf('&'); at !== -1; at = text.indexOf('&', at + 1)) if (++fields > max) return true;
  return false;
}

/**
 * The HTTP GET and HTTP POST bindings on `/X.asmx/{Op}`
 * (docs/wire-contract.md#http-get-and-http-post-bindings), and the 405 answers of other verbs on
 * the group's paths. Their errors are ASMX's: `500`, plain text, CRLF
 * (docs/faults.md#http-get-and-http-post-errors). HEAD never runs an operation.
 */
export function registerHttpRoutes(app: FastifyInstance, group: GroupDef, exchange: Exchange): void {
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
        // Masked when recorded (recording/exchange.ts), whatever its shape.
        requestBody = body.toString('utf8');
        const sent = request.headers['content-type'];
        const type = parseContentType(sent).mediaType;
        const isForm = type === 'application/x-www-form-urlencoded' || (type === '' && body.length === 0);
        if (op && !isForm) {
          const reason =
            sent === undefined
              ? 'Request format is invalid: the body came without a Content-Type. The HTTP POST binding reads only an application/x-www-form-urlencoded body.'
              : `Request format is invalid: ${sent}. The HTTP POST binding reads only an application/x-www-form-urlencoded body.`;
          return exchange(
            request,
            reply,
            failure({ binding, group, operation: op, requestBody }, 'client-error', 500, reason, {
              text: requestFormatText(sent ?? ''),
            }),
          );
        }
        if (op && fieldsOver(requestBody, MAX_FORM_FIELDS)) {
          return exchange(
            request,
            reply,
            failure(
              // Its first fields recorded, as evidence: the rest is more of the same work.
              { binding, group, operation: op, requestBody: headOf(requestBody) },
              'client-error',
              500,
              `Request format is invalid: the form has more than ${MAX_FORM_FIELDS} fields (an operation takes at most 3).`,
              { text: TOO_MANY_FIELDS_TEXT },
            ),
          );
        }
        entries = new URLSearchParams(requestBody);
      }
      if (!op) return exchange(request, reply, unknownMethod({ binding, group, requestBody }, name));
      return exchange(request, reply, {
        binding,
        group,
        operation: op,
        read: httpParamReader(entries),
        requestBody,
      });
    };
    if (binding === 'http-get') app.get(httpRoute, httpConfig, handler);
    else app.post(httpRoute, httpConfig, handler);
  }

  // HEAD on an operation: ASMX found no method for it and answered so (500); nothing runs.
  app.head(httpRoute, { config: { asmxGroup: group } }, async (request, reply) => {
    const name = (request.params as { op: string }).op;
    const reason = group.operations.some((o) => o.name === name)
      ? `HEAD does not call ${name}: an operation never runs on a HEAD. Call it with GET or POST.`
      : undefined;
    return exchange(
      request,
      reply,
      unknownMethod({ binding: 'http-get', group, requestBody: '' }, name, reason),
    );
  });

  // Other verbs: 405 with Allow, recorded like any call (IIS refused them before ASMX saw them).
  const refuse = (kind: 'soap' | 'http') => async (request: FastifyRequest, reply: FastifyReply) => {
    const binding: Binding = kind === 'soap' ? soapBindingOf(request) : 'http-post';
    const message = `The HTTP verb ${request.method} is not allowed here. Use GET or POST.`;
    return exchange(
      request,
      reply,
      plainFailure({ binding, group, requestBody: '' }, 405, message, { headers: { allow: ALLOW } }),
    );
  };
  const otherVerbs = ['PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;
  app.route({
    method: [...otherVerbs],
    url: group.path,
    config: { asmxGroup: group },
    handler: refuse('soap'),
  });
  app.route({
    method: [...otherVerbs],
    url: httpRoute,
    config: { asmxGroup: group },
    handler: refuse('http'),
  });
}

function queryOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? '' : url.slice(q + 1);
}

/**
 * `/X.asmx/Foo` names no operation: ASMX's text on the wire (its own for a name that differs only
 * in case); the record says which operation was meant, or `reason` when given (a HEAD).
 */
function unknownMethod(
  base: { binding: Binding; group: GroupDef; requestBody: string },
  name: string,
  reason?: string,
): AsmxExchange {
  const shown = name.length > 100 ? `${name.slice(0, 100)}…` : name;
  const sameButCase = base.group.operations.find((o) => o.name.toLowerCase() === name.toLowerCase());
  if (sameButCase && sameButCase.name !== name) {
    return failure(
      base,
      'client-error',
      500,
      reason ??
        `${shown} Web Service method name is not valid. Method names are case-sensitive: did you mean ${sameButCase.name}?`,
      { text: methodNameCaseText(shown, sameButCase.name) },
    );
  }
  return failure(base, 'client-error', 500, reason ?? `${shown} Web Service method name is not valid.`, {
    text: invalidMethodNameText(shown),
  });
}
