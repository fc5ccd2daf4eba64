import { CSRF_HEADER } from '@school/contract';
import type { FastifyRequest } from 'fastify';
import { header } from '../http/headers.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * State-changing requests to this route must come from the console's own page (the CSRF
     * rule): set on every /api route where the API is registered, read from the route the
     * router chose, never from the URL's text (`/%61pi/…` reaches the same route as `/api/…`).
     */
    consoleOnly?: boolean;
  }
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Why a request to a console-only route is refused as cross-site, or undefined when it is not.
 * A state-changing request's Origin (or, without one, its Referer) must be this server's own
 * origin, and it must carry a JSON body or the console's custom header, so that no plain HTML form
 * or simple request from another site can act with a staff user's cookie.
 */
export function crossSiteRefusal(
  request: FastifyRequest,
  publicBaseUrl: string | undefined,
): string | undefined {
  if (!STATE_CHANGING.has(request.method)) return undefined;
  const own = originOf(publicBaseUrl ?? `${request.protocol}://${request.host}`);
  const origin = header(request, 'origin');
  let from: string | undefined;
  if (origin !== undefined && origin !== 'null') from = originOf(origin);
  else {
    const referer = header(request, 'referer');
    if (referer) from = originOf(referer);
  }
  if (from === undefined) return 'This request must come from the console (it has no Origin).';
  if (from !== own) return 'This request must come from the console (its Origin is another site).';
  const type = (header(request, 'content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json' && header(request, CSRF_HEADER) === undefined) {
    return `This request must carry a JSON body or the ${CSRF_HEADER} header.`;
  }
  return undefined;
}

/** `http://Example.org:80/x` → `http://example.org`; undefined when not a URL. */
function originOf(url: string): string | undefined {
  return URL.canParse(url) ? new URL(url).origin : undefined;
}
