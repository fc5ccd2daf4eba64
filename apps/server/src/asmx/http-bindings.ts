import { httpParamReader, maskRequestBody, parseContentType } from '@school/asmx';
import { type GroupDef, secretParamNames } from '@school/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Binding } from '../store/index.js';
import { type AsmxAnswers, EMPTY, failure, plainFailure, soapBindingOf } from './answers.js';

const ALLOW = 'GET, POST';

/**
 * The HTTP GET and HTTP POST bindings on `/X.asmx/{Op}`
 * (docs/wire-contract.md#http-get-and-http-post-bindings), and the 405 answers of other verbs on
 * the group's paths. HEAD is refused rather than run as a GET: an operation must not act on it.
 */
export function registerHttpRoutes(app: FastifyInstance, group: GroupDef, answers: AsmxAnswers): void {
  const secrets = secretParamNames(group.operations);
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
          return answers.finish(
            request,
            reply,
            failure({ binding, group, operation: op, requestBody }, 'client-error', 415, message),
          );
        }
        entries = new URLSearchParams(body.toString('utf8'));
      }
      if (!op) {
        return answers.finish(
          request,
          reply,
          failure({ binding, group, requestBody }, 'client-error', 404, unknownMethodMessage(group, name)),
        );
      }
      const ex = await answers.perform(
        { binding, group, requestBody },
        op,
        httpParamReader(entries),
        request,
      );
      return answers.finish(request, reply, ex);
    };
    if (binding === 'http-get') app.get(httpRoute, httpConfig, handler);
    else app.post(httpRoute, httpConfig, handler);
  }

  // Other verbs: 405 with Allow, recorded like any call.
  const refuse = (kind: 'soap' | 'http') => async (request: FastifyRequest, reply: FastifyReply) => {
    const binding: Binding =
      kind === 'soap' ? soapBindingOf(request) : request.method === 'HEAD' ? 'http-get' : 'http-post';
    const message = `The HTTP verb ${request.method} is not allowed here. Use GET or POST.`;
    return answers.finish(
      request,
      reply,
      plainFailure({ binding, group, requestBody: '' }, 405, message, { allow: ALLOW }),
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
    method: [...otherVerbs, 'HEAD'],
    url: httpRoute,
    config: { asmxGroup: group },
    handler: refuse('http'),
  });
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
