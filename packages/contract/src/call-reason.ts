/**
 * Why a call was refused, as staff would say it: "missing parameter", "invalid phone". ASMX
 * answers a missing parameter with a 500 and a client error is the caller's mistake, so neither the status class nor the status alone says what happened: the recorded
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
  [/not satisfiable/, 'range not satisfiable'],
  [/^The request could not be read/, 'request not received'],
];

/** Refusals recorded without an error text (a range, a verb), known by their status alone. */
const STATUS_REASONS: Readonly<Record<number, string>> = {
  404: 'not found',
  405: 'method not allowed',
  413: 'too large',
  415: 'wrong content type',
  416: 'range not satisfiable',
  429: 'too many calls',
};

/** The short reason of a refused call, from its recorded error or else its status; undefined when none fits. */
export function refusalReason(error: string | null, status?: number): string | undefined {
  for (const [pattern, reason] of error ? REASONS : []) {
    const match = pattern.exec(error ?? '');
    if (match) return reason.replace('$1', match[1] ?? '');
  }
  return status === undefined ? undefined : STATUS_REASONS[status];
}
