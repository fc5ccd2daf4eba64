import {
  maskParams,
  type OperationDef,
  type OperationName,
  type ValidateOptions,
  validateParams,
} from '@school/contract';
import { isUnavailableError } from '../store/index.js';
import { type CallForSchool, createSchoolDirectory } from './call-school.js';
import { createOperationHandlers, type HandlerDeps, type OperationHandler } from './handlers.js';
import type { CallContext, OperationOutcome, OperationResult, RecordedParams } from './types.js';

export type { CallForSchool } from './call-school.js';
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
  /**
   * The school a call belongs to (operations/call-school.ts), for a call refused before its
   * operation ran (`run` decides it for the others: its result's `schoolId`).
   */
  schoolOf(call: CallForSchool): Promise<number | null>;
}

export interface OperationRunnerOptions extends ValidateOptions, HandlerDeps {
  /** Where a failure to read the schools for deciding calls' schools is told. */
  readonly log?: { warn(obj: unknown, msg: string): void } | undefined;
}

/** The handler found the school its call names (it went on, or refused the caller for that school). */
const schoolFound = (outcome: OperationOutcome): boolean =>
  outcome.outcome === 'ok' || outcome.status === 403;

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
  const schools = createSchoolDirectory(options.store, options.log);
  /** The call's school, from its parameters as recorded (a school's base URL is no secret). */
  const schoolOf = (op: OperationDef, params: RecordedParams, context: CallContext, found = false) =>
    schools.schoolOf({
      operation: op.name,
      params,
      callerIp: context.callerIp,
      actingForSchoolId: context.actingForSchoolId,
      staffSchoolIds: context.staffSchoolIds,
      schoolFound: found,
    });
  // Named, as the other steps of a call are, for CPU profiles (bench/stages.mjs).
  const run: OperationRunner['run'] = async function runOperation(op, read, context) {
    try {
      const validated = validateParams(op, read, options);
      if (!validated.ok) {
        const { message, param, reason } = validated.error;
        const params = receivedParams(op, read);
        return {
          outcome: 'client-error',
          status: 400,
          message,
          param,
          params,
          schoolId: await schoolOf(op, params, context),
          ...(reason === 'missing' ? { absent: true } : {}),
        };
      }
      const { values } = validated;
      // The table's operations are the handlers' keys; values were validated against its params.
      const handler = handlers[op.name as OperationName] as OperationHandler<OperationName> | undefined;
      if (!handler) throw new Error(`No handler for the operation ${op.name}`);
      const outcome = await handler(values as never, context);
      const params = maskParams(op, values);
      return { ...outcome, params, schoolId: await schoolOf(op, params, context, schoolFound(outcome)) };
    } catch (err) {
      // The database away is an outage the store reports once (store/pg-watch.ts), not an error per call.
      if (isUnavailableError(err))
        context.log.debug({ err }, 'operation failed: the database is unavailable');
      else context.log.error({ err }, 'operation failed');
      const params = receivedParams(op, read);
      return {
        outcome: 'server-error',
        params,
        schoolId: await schoolOf(op, params, context).catch(() => null),
      };
    }
  };
  return { run, schoolOf: (call) => schools.schoolOf(call) };
}
