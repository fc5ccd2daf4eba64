import { type CallDetail, type OperationDef, operationByName } from '@school/contract';

/** Whether a call can be sent again from the console, and with what; or why not. */
export type Replay =
  | { readonly ok: true; readonly operation: OperationDef; readonly values: Readonly<Record<string, string>> }
  | { readonly ok: false; readonly why: 'unknown' | 'unreadable' | 'secret'; readonly reason: string };

/**
 * A call is replayed with its recorded parameters: not when it named no operation the service has,
 * when its parameters could not be read, nor when one of them is a secret the record keeps only
 * masked (AuthCode's code): sending `***` would be another call altogether.
 */
export function replayOf(call: Pick<CallDetail, 'operation' | 'params'>): Replay {
  const operation = call.operation === null ? undefined : operationByName(call.operation);
  if (!operation) {
    return {
      ok: false,
      why: 'unknown',
      reason: 'it named no operation this service has, so there is nothing to send again.',
    };
  }
  if (call.params === null) {
    return {
      ok: false,
      why: 'unreadable',
      reason: 'its parameters could not be read, so they cannot be sent again.',
    };
  }
  const secret = operation.params.find((p) => p.secret && call.params?.[p.name] !== undefined);
  if (secret) {
    return {
      ok: false,
      why: 'secret',
      reason: `the ${secret.name} it sent is not kept (the record masks it), so it cannot be sent again as it was.`,
    };
  }
  const values: Record<string, string> = {};
  for (const p of operation.params) {
    const value = call.params[p.name];
    if (value !== undefined) values[p.name] = value;
  }
  return { ok: true, operation, values };
}
