import type { OperationDef } from '@school/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { recordExchange } from '../../recording/exchange.js';
import { type AsmxExchange, answerUnrecorded, createOperationAnswer, type ExchangeBase } from './answers.js';

/** An operation a route found in a request, with its parameters as the caller sent them. */
export interface OperationCall extends ExchangeBase {
  readonly operation: OperationDef;
  /** A parameter as the caller sent it, or undefined when absent. */
  readonly read: (name: string) => string | undefined;
}

/**
 * What a route read of a request: an operation to run, or the request's answer already (a
 * refusal: an unreadable envelope, an unknown operation, a refused caller, …).
 */
export type CallInput = OperationCall | AsmxExchange;

/** Takes a call on an `.asmx` endpoint from what its route read to its answer. */
export type Exchange = (
  request: FastifyRequest,
  reply: FastifyReply,
  input: CallInput,
) => Promise<FastifyReply>;

/**
 * The one way through an `.asmx` call, each step once and in order: the operation runs
 * (operations/run.ts), its answer in the caller's binding is built (answers.ts), the exchange is
 * recorded with the deliveries it queues in one commit (recording/exchange.ts), and only then is
 * the answer sent; when nothing could be recorded, the binding's error says nothing was done.
 */
export function createExchange(app: FastifyInstance): Exchange {
  const answerOf = createOperationAnswer(app.config.SERVICE_NAMESPACE, app.bookBlobs);

  return async function exchange(request, reply, input) {
    let ex: AsmxExchange;
    if ('read' in input) {
      const result = await app.operations.run(input.operation, input.read, {
        callerIp: request.ip,
        staff: request.staff?.username,
        log: request.log,
      });
      ex = answerOf(input, result, request);
    } else {
      ex = input;
      if (ex.unrecorded) return reply.code(ex.status).headers(ex.headers).send(ex.body);
    }
    const recorded = await recordExchange(app, request, reply, ex);
    if (!recorded.ok) return answerUnrecorded(reply, ex.binding, recorded.unavailable);
    return reply.code(ex.status).headers(ex.headers).send(ex.body);
  };
}
