import {
  type OperationDef,
  type OperationName,
  type ValidateOptions,
  validateParams,
} from '@school/contract';
import { createOperationHandlers, type HandlerDeps, type OperationHandler } from './handlers.js';
import type { CallContext, OperationResult } from './types.js';

export type { CallContext, OperationResult } from './types.js';

export interface OperationRunner {
  /**
   * Validates and performs an operation. `read` returns a parameter as the caller sent it, or
   * undefined when absent. The same code serves every binding and the console.
   */
  run(
    op: OperationDef,
    read: (name: string) => string | undefined,
    context: CallContext,
  ): Promise<OperationResult>;
}

export interface OperationRunnerOptions extends ValidateOptions, HandlerDeps {}

/** Validation by the table, then the operation's handler. */
export function createOperationRunner(options: OperationRunnerOptions): OperationRunner {
  const handlers = createOperationHandlers(options);
  return {
    async run(op, read, context) {
      const validated = validateParams(op, read, options);
      if (!validated.ok) {
        return {
          outcome: 'client-error',
          status: 400,
          message: validated.error.message,
          param: validated.error.param,
        };
      }
      const { values } = validated;
      // The table's operations are the handlers' keys; values were validated against its params.
      const handler = handlers[op.name as OperationName] as OperationHandler<OperationName> | undefined;
      if (!handler) throw new Error(`No handler for the operation ${op.name}`);
      const outcome = await handler(values as never, context);
      return { ...outcome, values };
    },
  };
}
