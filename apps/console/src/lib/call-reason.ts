import type { CallSummary } from '@school/contract';

/**
 * What a call's outcome means, as staff would say it: "OK", "Refused: missing parameter (500)",
 * "Failed (500)". ASMX answers a missing parameter with a 500 and a client error is the caller's
 * mistake, so neither the status class nor the status alone says what happened: the recorded
 * error text does (its texts: docs/faults.md).
 */
const REASONS: readonly [RegExp, string][] = [
  [/^Missing parameter/, 'missing parameter'],
  [/^Invalid (code|phone)/, 'invalid $1'],
  [/^Invalid /, 'value too long'],
  [/^Unknown school/, 'unknown school'],
  [/^Caller .* is not allowed|^Calls from .* are not allowed/, 'caller not allowed'],
  [/^No book exists/, 'no such book'],
  [/^Too many codes/, 'too many codes'],
  [/^Too many calls/, 'too many calls'],
  [/^Server was unable to read request\. ---> Request format is invalid/, 'invalid request format'],
  [/^Server was unable to read request/, 'unreadable XML'],
  [
    /^Unsupported Content-Type|^The request has no Content-Type|must be sent as text\/xml|^Request format is invalid/,
    'wrong content type',
  ],
  [/^Unsupported charset/, 'unsupported charset'],
  [
    /SOAPAction|valid action parameter|action .* was not recognized|Web Service method name is not valid|^HEAD does not call/,
    'unknown operation',
  ],
  [/^Possible SOAP version mismatch/, 'not a SOAP envelope'],
  [/^SOAP header .* was not understood/, 'header not understood'],
  [/^The request body is larger/, 'too large'],
  [/^The HTTP verb/, 'method not allowed'],
  [/[Rr]ange/, 'range not satisfiable'],
  [/^The request could not be read/, 'request not received'],
];

/** The short reason of a refused call, from its recorded error; undefined when none fits. */
export function refusalReason(error: string | null): string | undefined {
  if (!error) return undefined;
  for (const [pattern, reason] of REASONS) {
    const match = pattern.exec(error);
    if (match) return reason.replace('$1', match[1] ?? '');
  }
  return undefined;
}

/** The outcome badge's text. */
export function outcomeText(call: Pick<CallSummary, 'outcome' | 'status' | 'error'>): string {
  if (call.outcome === 'ok') return 'OK';
  if (call.outcome === 'server-error') return `Failed (${call.status})`;
  const reason = refusalReason(call.error);
  return reason ? `Refused: ${reason} (${call.status})` : `Refused (${call.status})`;
}
