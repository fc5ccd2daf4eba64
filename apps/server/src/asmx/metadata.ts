import {
  renderDisco,
  renderHelpIndex,
  renderHelpOperation,
  renderHelpUnknownOperation,
  renderWsdl,
} from '@school/asmx';
import { findOperation, type GroupDef } from '@school/contract';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config.js';
import { publicBaseUrl } from './base-url.js';

const XML = 'text/xml; charset=utf-8';
const HTML = 'text/html; charset=utf-8';

/**
 * `GET /X.asmx`: WSDL (`?wsdl`, any case), DISCO (`?disco`), the operation list, and an
 * operation's page (`?op=Name`). Documents depend on the base URL, so they are cached per base
 * URL, in a bounded cache (a stream of invented Host headers cannot grow memory).
 */
export function createMetadataPages(config: Config) {
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
      const groupUrl = `${base}${group.path}`;
      const ns = config.SERVICE_NAMESPACE;
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
