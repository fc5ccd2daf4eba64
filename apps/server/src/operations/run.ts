import {
  maskParams,
  type OperationDef,
  type OperationName,
  type ValidateOptions,
  validateParams,
} from '@school/contract';
import { isUnavailableError } from '../store/index.js';
import { createOperationHandlers, type HandlerDeps, type OperationHandler } from './handlers.js';
import type { CallContext, OperationResult, RecordedParams } from './types.js';

export type { CallContext, OperationResult, RecordedParams } from './types.js';

export interface OperationRunner {
  /**
   * Validates and performs an operation, whichever door the call came in by (the .asmx bindings,
   * the console). `read` returns a parameter as the caller sent it, or undefined when absent. The
   * result carries the parameters as the record shows them; an unexpected error is logged with the
   * request's id and becomes a server error: it never escapes to the door.
   */
  run(
    op: OperationDef,
    read: (name: string) => string | undefined,
    context: CallContext,
  ): Promise<OperationResult>;
}

export interface OperationRunnerOptions extends ValidateOptions, HandlerDeps {}

/** The parameters as received, secrets masked: what the record shows of a call refused or failed. */
function receivedParams(op: OperationDef, read: (name: string) => string | undefined): RecordedParams {
  const received: Record<string, string> = Object.create(null);
  for (const p of op.params) {
    const value = read(p.name);
    if (value !== undefined) received[p.name] = value;
  }
  return maskParams(op, received);
}

/** Validation by the table, then the operation's handler. */
export function createOperationRunner(options: OperationRunnerOptions): OperationRunner {
  const handlers = createOperationHandlers(options);
  // Named, as the other steps of a call are, for CPU profiles (bench/stages.mjs).
  const run: OperationRunner['run'] = async function runOperation(op, read, context) {
    try {
      const validated = validateParams(op, read, options);
      if (!validated.ok) {
        const { message, param, reason } = validated.error;
        return {
          outcome: 'client-error',
          status: 400,
          message,
          param,
          params: receivedParams(op, read),
          ...(reason === 'missing' ? { absent: true } : {}),
        };
      }
      const { values } = validated;
      // The table's operations are the handlers' keys; values were validated against its params.
      const handler = handlers[op.name as OperationName] as OperationHandler<OperationName> | undefined;
      if (!handler) throw new Error(`No handler for the operation ${op.name}`);
      const outcome = await handler(values as never, context);
      return { ...outcome, params: maskParams(op, values) };
    } catch (err) {
      // The database away is an outage the store reports once (store/pg-watch.ts), not an error per call.
      if (isUnavailableError(err))
        context.log.debug({ err }, 'operation failed: the database is unavailable');
      else context.log.error({ err }, 'operation failed');
      return { outcome: 'server-error', params: receivedParams(op, read) };
    }
  };
  return { run };
}
