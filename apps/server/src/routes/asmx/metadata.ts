import {
  renderDisco,
  renderHelpIndex,
  renderHelpOperation,
  renderHelpUnknownOperation,
  renderWsdl,
} from '@school/asmx';
import { findOperation, type GroupDef } from '@school/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { publicBaseUrl } from './base-url.js';

const XML = 'text/xml; charset=utf-8';
const HTML = 'text/html; charset=utf-8';
/** What ASMX sent with its WSDL, DISCO and help pages. */
const CACHE = 'private, max-age=0';

/**
 * The group's path as the client spelled it (`/authcodesending.asmx`), which ASMX echoed in the
 * addresses of its WSDL and DISCO. Only a spelling of the group's own path is taken (the router
 * matched it in any case); anything else gives the group's path.
 */
function spelledPath(group: GroupDef, request: FastifyRequest): string {
  const sent = request.originalUrl.slice(0, group.path.length);
  const next = request.originalUrl.charAt(group.path.length);
  return sent.toLowerCase() === group.path.toLowerCase() && (next === '' || '/?#'.includes(next))
    ? sent
    : group.path;
}

/**
 * `GET /X.asmx`: WSDL (`?wsdl`, any case), DISCO (`?disco`), the operation list, and an
 * operation's page (`?op=Name`), all with ASMX's `Cache-Control: private, max-age=0`. Documents
 * depend on the group's URL as the client wrote it, so they are cached per URL, in a bounded
 * cache (a stream of invented Host headers or path spellings cannot grow memory).
 */
export function createMetadataPages(config: FastifyInstance['config']) {
  const cache = new LRUCache<string, Buffer>({ max: 512 });

  function cached(key: string, render: () => string): Buffer {
    let bytes = cache.get(key);
    if (!bytes) {
      bytes = Buffer.from(render());
      cache.set(key, bytes);
    }
    return bytes;
  }

  return {
    serve(group: GroupDef, request: FastifyRequest, reply: FastifyReply): FastifyReply {
      const query = new URLSearchParams(
        request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '',
      );
      const keys = new Set([...query.keys()].map((k) => k.toLowerCase()));
      const { base, host } = publicBaseUrl(config, request);
      const groupUrl = `${base}${spelledPath(group, request)}`;
      const ns = config.SERVICE_NAMESPACE;
      reply.header('cache-control', CACHE);
      if (keys.has('wsdl')) {
        return reply.type(XML).send(cached(`wsdl ${groupUrl}`, () => renderWsdl(group, ns, groupUrl)));
      }
      if (keys.has('disco')) {
        return reply.type(XML).send(cached(`disco ${groupUrl}`, () => renderDisco(group, ns, groupUrl)));
      }
      const opName = [...query].find(([k]) => k.toLowerCase() === 'op')?.[1];
      if (opName !== undefined) {
        const op = findOperation(group, opName);
        if (!op) return reply.code(404).type(HTML).send(renderHelpUnknownOperation(group, opName));
        return reply
          .type(HTML)
          .send(
            cached(`op ${host} ${group.name} ${op.name}`, () => renderHelpOperation(group, op, ns, host)),
          );
      }
      return reply.type(HTML).send(cached(`index ${group.name}`, () => renderHelpIndex(group)));
    },
  };
}
