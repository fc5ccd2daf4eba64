import type { FastifyInstance, FastifyRequest } from 'fastify';

// A Host header is attacker-chosen: anything but a plain host[:port] is not echoed.
const PLAIN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The base URL clients reach us at: PUBLIC_BASE_URL, else the request's scheme and Host
 * (`localhost` when the Host header is not a plain host[:port]).
 */
export function publicBaseUrl(
  config: FastifyInstance['config'],
  request: FastifyRequest,
): { base: string; host: string } {
  if (config.PUBLIC_BASE_URL)
    return { base: config.PUBLIC_BASE_URL, host: new URL(config.PUBLIC_BASE_URL).host };
  const host = PLAIN_HOST.test(request.host) ? request.host : 'localhost';
  return { base: `${request.protocol}://${host}`, host };
}
