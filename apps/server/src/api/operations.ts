import { maskQuery } from '@school/asmx';
import {
  maskParams,
  operationByName,
  operations as operationDefs,
  operationResultSchema,
  problemSchema,
} from '@school/contract';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { formatRequest, formatResponse } from '../calls/http-message.js';
import { callRecord } from '../calls/record.js';
import type { NewDelivery } from '../store/index.js';
import { problem } from './problem.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';
/** Secret parameter names (auth codes), masked in a query string sent here too. */
const SECRET_PARAMS = operationDefs.flatMap((op) => op.params.filter((p) => p.secret).map((p) => p.name));

/**
 * `POST /api/operations/{name}`: the console's door to the operations. It runs the same operation
 * code as the .asmx endpoints, records the call with binding `console`, and answers its id.
 */
export const operationRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store, operations, config } = app;

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
        },
      },
    },
    async (request, reply) => {
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

      let status: number;
      let answer: Record<string, unknown>;
      let params: Record<string, string> | null = op ? maskParams(op, received) : null;
      let outcome: 'ok' | 'client-error' | 'server-error' = 'client-error';
      let error: string | null = null;
      let deliveries: readonly NewDelivery[] | undefined;
      let note: string | null = null;
      let afterCommit: (() => void) | undefined;
      if (!op) {
        status = 404;
        error = `There is no operation named '${name.slice(0, 64)}'.`;
        answer = problem(404, error);
      } else if (wrongType) {
        status = 400;
        error = `Invalid ${wrongType}: it must be a string.`;
        answer = problem(400, error, { errors: { [wrongType]: error } });
      } else {
        try {
          const result = await operations.run(op, (n) => received[n], { callerIp: request.ip });
          if (result.outcome === 'ok') {
            status = 200;
            outcome = 'ok';
            params = maskParams(op, result.values);
            deliveries = result.deliveries;
            note = result.note ?? null;
            afterCommit = result.afterCommit;
            answer = { outcome: 'ok', status: 200, message: result.note ?? 'Done.' };
          } else {
            status = result.status;
            error = result.message;
            if (result.values) params = maskParams(op, result.values);
            answer = problem(
              status,
              result.message,
              result.param ? { errors: { [result.param]: result.message } } : {},
            );
            if (result.retryAfter) reply.header('retry-after', String(result.retryAfter));
          }
        } catch (err) {
          request.log.error({ err }, 'operation failed');
          status = 500;
          outcome = 'server-error';
          error = `An internal error occurred (request ${request.id}).`;
          answer = problem(500, error);
        }
      }

      const contentType = status === 200 ? JSON_TYPE : PROBLEM_TYPE;
      let id: number;
      try {
        id = await store.calls.record(
          callRecord(request, reply, app.diskSpace.recordBytes(), {
            group: op?.group ?? '',
            operation: op?.name ?? null,
            binding: 'console',
            params,
            outcome,
            status,
            error,
            request: formatRequest(
              request.method,
              maskQuery(request.url, SECRET_PARAMS),
              request.raw.httpVersion,
              request.headers,
              JSON.stringify(op ? maskParams(op, received) : {}),
            ),
            // The id is not known until the record is written, so the stored answer goes without it.
            response: formatResponse(status, { 'content-type': contentType }, JSON.stringify(answer)),
            note,
          }),
          deliveries,
        );
      } catch (err) {
        request.log.error({ err }, 'could not record the call');
        return reply
          .code(500)
          .type(PROBLEM_TYPE)
          .send(problem(500, 'The call could not be recorded; nothing was done.'));
      }
      afterCommit?.();
      await app.audit(request, {
        action: 'send',
        target: `call ${id} (${op?.name ?? name.slice(0, 64)})`,
        details: { outcome, status, ...(params ? { params } : {}), ...(error ? { error } : {}) },
      });
      return status === 200
        ? reply
            .code(200)
            .type(JSON_TYPE)
            .send({ id, ...answer } as z.infer<typeof operationResultSchema>)
        : reply
            .code(status as 400)
            .type(PROBLEM_TYPE)
            .send({ ...(answer as z.infer<typeof problemSchema>), callId: id });
    },
  );
};
