import {
  type CallDelivery,
  callVerdict,
  maskParams,
  operationByName,
  operationResultSchema,
  type Problem,
  problemSchema,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problem, unavailableDetail } from '../../http/problem.js';
import { type CallExchange, recordExchange } from '../../recording/exchange.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';

/**
 * `POST /api/operations/{name}`: the console's door to the operations. It takes the same way as
 * the .asmx endpoints (the operation runs, its answer is built, the exchange is recorded by
 * recording/exchange.ts, then answered), records the call with binding `console`, and answers its
 * id.
 */
export const operationRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();

  app.post(
    '/operations/:name',
    {
      schema: {
        summary: 'Run an operation',
        description:
          'Runs one of the five operations exactly as the .asmx endpoints do, recorded as a `console` call. Parameters are strings, all required.',
        tags: ['operations'],
        params: z.object({ name: z.string().max(64) }),
        body: z.record(z.string(), z.unknown()).nullish(),
        response: {
          200: operationResultSchema,
          '4xx': problemSchema,
          500: problemSchema,
          503: problemSchema,
        },
      },
    },
    async (request, reply) => {
      // Sends the service cannot take now are refused before anything is written.
      const refusal = app.readiness.refusal();
      if (refusal) {
        app.metrics.observeRefusal(refusal.cause);
        return reply
          .code(503)
          .header('retry-after', String(refusal.retryAfterSeconds))
          .type(PROBLEM_TYPE)
          .send(problem(503, unavailableDetail(refusal.cause)));
      }
      const { name } = request.params;
      const op = operationByName(name);
      const body = request.body ?? {};
      const received: Record<string, string> = Object.create(null);
      let wrongType: string | undefined;
      for (const param of op?.params ?? []) {
        const value = body[param.name];
        if (typeof value === 'string') received[param.name] = value;
        else if (value !== undefined && value !== null) wrongType ??= param.name;
      }
      const base = {
        binding: 'console' as const,
        group: op?.group ?? '',
        operation: op?.name ?? null,
        requestBody: JSON.stringify(op ? maskParams(op, received) : {}),
      };
      const refused = (status: number, detail: string, extra: Partial<Problem> = {}): CallExchange => ({
        ...base,
        params: op ? maskParams(op, received) : null,
        outcome: status >= 500 ? 'server-error' : 'client-error',
        status,
        error: detail,
        headers: { 'content-type': PROBLEM_TYPE },
        body: problem(status, detail, extra),
      });

      let ex: CallExchange;
      if (!op) {
        ex = refused(404, `There is no operation named '${name.slice(0, 64)}'.`);
      } else if (wrongType) {
        const detail = `Invalid ${wrongType}: it must be a string.`;
        ex = refused(400, detail, { errors: { [wrongType]: detail } });
      } else {
        const result = await app.operations.run(op, (n) => received[n], {
          callerIp: request.ip,
          staff: request.staff?.username,
          log: request.log,
        });
        const { params } = result;
        if (result.outcome === 'ok') {
          ex = {
            ...base,
            params,
            outcome: 'ok',
            status: 200,
            error: null,
            headers: { 'content-type': JSON_TYPE },
            body: {
              outcome: 'ok',
              status: 200,
              message: result.note ?? 'Done.',
              queued: result.deliveries?.length ?? 0,
            },
            deliveries: result.deliveries,
            note: result.note ?? null,
            afterCommit: result.afterCommit,
          };
        } else if (result.outcome === 'client-error') {
          ex = {
            ...refused(
              result.status,
              result.message,
              result.param ? { errors: { [result.param]: result.message } } : {},
            ),
            params,
            ...(result.retryAfter
              ? { headers: { 'content-type': PROBLEM_TYPE, 'retry-after': String(result.retryAfter) } }
              : {}),
          };
        } else {
          ex = { ...refused(500, `An internal error occurred (request ${request.id}).`), params };
        }
        // The school the call belongs to, as the operation decided it (operations/call-school.ts).
        ex = { ...ex, schoolId: result.schoolId };
      }

      const answer = ex.body as Record<string, unknown>;
      const recorded = await recordExchange(app, request, reply, ex);
      if (!recorded.ok) {
        return recorded.unavailable
          ? reply
              .code(503)
              .header('retry-after', '5')
              .type(PROBLEM_TYPE)
              .send(problem(503, unavailableDetail('database')))
          : reply
              .code(500)
              .type(PROBLEM_TYPE)
              .send(problem(500, 'The call could not be recorded; nothing was done.'));
      }
      const { id, facts } = recorded;
      // What the record holds, secrets masked; an unknown name is in its error, masked, not here.
      // Its result is the call's verdict as it stands when sent (queued, not sent yet): what
      // came of the SMS later is the call's page, which the entry's target links to.
      await app.audit(request, {
        action: 'send',
        target: `call ${id} (${op?.name ?? 'no such operation'})`,
        details: {
          result: callVerdict(facts, queuedOf(ex)).text,
          status: facts.status,
          ...(facts.params ? { params: facts.params } : {}),
          ...(facts.error ? { error: facts.error } : {}),
        },
      });
      // The stored answer goes without the id: it is not known until the record is written. (Its
      // shape is the response schema's, by the status; the schema checks it as it is sent.)
      const answered: unknown = ex.status === 200 ? { id, ...answer } : { ...answer, callId: id };
      return (reply as FastifyReply).code(ex.status).headers(ex.headers).send(answered);
    },
  );
};

/** Where what a send queued stands as it is answered: waiting for its first attempt. */
function queuedOf(ex: CallExchange): CallDelivery | null {
  const count = ex.deliveries?.length ?? 0;
  return count === 0 ? null : { state: 'waiting', count };
}
