import type { FastifyInstance } from 'fastify';
import { describeWait, describeWindow, FixedWindow } from '../../limits/window.js';
import { ipAllowList } from '../../net/ip-allow-list.js';
import { bindingOf, failure, plainFailure, soapVersionOf, TEXT } from './answers.js';
import type { Exchange } from './exchange.js';

/**
 * Callers first, before a body is read (docs/security.md): the address allow-list
 * (ASMX_ALLOWED_IPS), then the per-address limit on operation calls (ASMX_LIMIT_PER_IP). A
 * refusal is recorded once per address and minute (or limit window), so a flood cannot fill the
 * disk with records of itself.
 */
export function checkCallers(app: FastifyInstance, exchange: Exchange): void {
  const { config } = app;
  const allowed = config.ASMX_ALLOWED_IPS.length > 0 ? ipAllowList(config.ASMX_ALLOWED_IPS) : undefined;
  const perIp = config.ASMX_LIMIT_PER_IP && new FixedWindow(config.ASMX_LIMIT_PER_IP);
  const refusalsRecorded = new FixedWindow({ max: 1, windowMs: 60_000 });

  app.addHook('onRequest', async (request, reply) => {
    const { asmxGroup: group, asmxKind } = request.routeOptions.config;
    if (allowed && !allowed(request.ip)) {
      const message = `Calls from ${request.ip} are not allowed here.`;
      if (!group) return reply.code(403).type(TEXT).send(message);
      const binding = bindingOf(request, asmxKind);
      return exchange(
        request,
        reply,
        plainFailure({ binding, group, requestBody: '[body not read]' }, 403, message, {
          unrecorded: !refusalsRecorded.hit(request.ip).ok,
        }),
      );
    }
    if (!perIp || !group || asmxKind === undefined) return;
    const hit = perIp.hit(request.ip);
    if (hit.ok) return;
    const { max, windowMs } = perIp.limit;
    const binding = bindingOf(request, asmxKind);
    return exchange(
      request,
      reply,
      failure(
        { binding, group, requestBody: '[body not read]' },
        'client-error',
        soapVersionOf(binding) ? 500 : 429,
        `Too many calls from ${request.ip}: at most ${max} per ${describeWindow(windowMs)}. Try again in ${describeWait(hit.retryAfterMs)}.`,
        {
          headers: { 'retry-after': String(Math.ceil(hit.retryAfterMs / 1000)) },
          note: 'Later refusals from this address in the same window are not recorded.',
          unrecorded: hit.refusedBefore > 0,
        },
      ),
    );
  });
}
