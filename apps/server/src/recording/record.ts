import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Binding, NewCall, Outcome } from '../store/index.js';
import { capText } from './http-message.js';

/** A call's outcome as the metrics count it: its record's, or `unrecorded` when the record failed. */
export type CallOutcome = Outcome | 'unrecorded';

/** What one exchange amounted to, whichever door it came in by. */
export interface CallFacts {
  readonly group: string;
  readonly operation: string | null;
  readonly binding: Binding;
  /** Parameters as received, secrets already masked; null when none could be read. */
  readonly params: Readonly<Record<string, string>> | null;
  readonly outcome: Outcome;
  readonly status: number;
  readonly error: string | null;
  /** The whole request and response as HTTP messages, secrets already masked. */
  readonly request: string;
  readonly response: string;
  /** The response is its kind's canonical answer, whole (recorded by reference: exchange.ts). */
  readonly canonical?: boolean;
  /** What the operation did, in words. */
  readonly note?: string | null;
  /** The request's User-Agent, secrets already masked. */
  readonly userAgent: string | null;
}

/**
 * The call record of an exchange, its raw messages capped at `maxBytes` each; with 0 (free disk
 * space is low) only their first lines are kept. `schoolId`: the school it belongs to (null: none).
 * `responseRef`: the id of the canonical answer the response is (store/call-answers.ts), kept in
 * place of its text, whole whatever `maxBytes` (it takes no room).
 */
export function callRecord(
  request: FastifyRequest,
  reply: FastifyReply,
  maxBytes: number,
  facts: CallFacts,
  schoolId: number | null,
  responseRef?: number | undefined,
): NewCall {
  const req = maxBytes > 0 ? capText(facts.request, maxBytes) : headLine(facts.request);
  const res =
    responseRef !== undefined
      ? { text: '', bytes: Buffer.byteLength(facts.response) }
      : maxBytes > 0
        ? capText(facts.response, maxBytes)
        : headLine(facts.response);
  return {
    // When the request arrived, in whole milliseconds, never before the millisecond it arrived
    // in: Date.now() - floor(elapsed) is at least floor(arrival), where rounding the elapsed time
    // could put a fast call 1 ms before a `from` taken just before it was sent.
    at: Date.now() - Math.floor(reply.elapsedTime),
    group_name: facts.group,
    operation: facts.operation,
    binding: facts.binding,
    caller_ip: request.ip,
    user_agent: facts.userAgent?.slice(0, 512) ?? null,
    params: facts.params === null ? null : JSON.stringify(facts.params),
    phone: phoneOf(facts.params),
    outcome: outcomeOf(facts.status, facts.outcome),
    status: facts.status,
    error: facts.error === null ? null : shortened(facts.error),
    duration_ms: reply.elapsedTime,
    request: req.text,
    request_bytes: req.bytes,
    response: res.text,
    response_bytes: res.bytes,
    note: facts.note ?? null,
    request_id: request.id,
    school_id: schoolId,
    response_ref: responseRef ?? null,
  };
}

/** E.164: what a phone parameter is once its operation has normalised it. */
const E164 = /^\+[1-9]\d{5,14}$/;

/**
 * The call's phone for History's phone filter: its `phone` parameter as the operation normalised
 * it (E.164). One that does not read as E.164 (refused before it was normalised) stays in `params`.
 */
const phoneOf = (params: CallFacts['params']): string | null => {
  const phone = params?.phone;
  return phone !== undefined && E164.test(phone) ? phone : null;
};

/**
 * The outcome a call is recorded and counted under, from the status it was answered with and the
 * outcome its door declared: a 4xx is always a client error (a book range answered 416 is not OK),
 * a 5xx a server error unless the answer blames the caller (a SOAP Client fault, ASMX's 500 for a
 * missing parameter: docs/faults.md), and anything below 400 keeps what the door said.
 */
export function outcomeOf(status: number, declared: Outcome): Outcome {
  if (status >= 500) return declared === 'client-error' ? 'client-error' : 'server-error';
  if (status >= 400) return 'client-error';
  return declared;
}

/** The request or status line alone, when raw bodies are not stored. */
function headLine(message: string): { text: string; bytes: number } {
  const end = message.indexOf('\r\n');
  const line = end === -1 ? message.slice(0, 200) : message.slice(0, Math.min(end, 2000));
  return {
    text: `${line}\r\n\r\n[not stored: free disk space is low]`,
    bytes: Buffer.byteLength(message),
  };
}

/** Characters of an error text a record keeps: a parser's message can quote a whole hostile tag. */
const MAX_ERROR_CHARS = 2000;

function shortened(text: string): string {
  return text.length <= MAX_ERROR_CHARS
    ? text
    : `${text.slice(0, MAX_ERROR_CHARS)}… [${text.length - MAX_ERROR_CHARS} more characters]`;
}
