import type { Readable } from 'node:stream';
import { echoForms, maskAnswerText, maskRequestBody, maskRequestText, maskValues } from '@school/asmx';
import { MASK, secretParamNames } from '@school/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { NewDelivery } from '../outbox/index.js';
import { type Binding, isUnavailableError, type Outcome } from '../store/index.js';
import { formatRequest, formatResponse } from './http-message.js';
import { type CallFacts, type CallOutcome, callRecord, outcomeOf } from './record.js';

/** Every operation's secret names, whatever the door: a code sent to the wrong one is masked too. */
const SECRETS = secretParamNames();

/** What one exchange with an operation amounts to, whichever door it came in by. */
export interface CallExchange {
  readonly binding: Binding;
  /** The endpoint group's service name. */
  readonly group: string;
  readonly operation: string | null;
  /** Parameters as received or normalised, secrets masked; null when none could be read. */
  readonly params: Readonly<Record<string, string>> | null;
  readonly outcome: Outcome;
  readonly status: number;
  /** The error text the caller gets, for the record. */
  readonly error: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer | Readable | object | undefined;
  /** The request body as text, as the door has it; the record masks its secrets (recordExchange). */
  readonly requestBody: string;
  /** What a reader read for the secret parameters: masked wherever it still stands whole in the record. */
  readonly secretValues?: readonly (string | undefined)[] | undefined;
  /** The response body as the record shows it, when it is not text (a PDF, an object). */
  readonly recordedBody?: string | undefined;
  /**
   * The answer's record when it is the same text for every call of its kind (canonicalResponseOf
   * its status, headers and body, built once): recorded by reference unless masking changes it.
   */
  readonly canonicalResponse?: string | undefined;
  /** Deliveries the call queues, committed with its record (the outbox). */
  readonly deliveries?: readonly NewDelivery[] | undefined;
  /** What the operation did, in words. */
  readonly note?: string | null | undefined;
  /** Work the operation starts only once its record is committed. */
  readonly afterCommit?: (() => void) | undefined;
  /**
   * The school the call belongs to, as its operation decided it (OperationResult's `schoolId`);
   * undefined for a call refused before its operation ran, which is decided here from what was
   * read of it (operations/call-school.ts).
   */
  readonly schoolId?: number | null | undefined;
}

/** What came of recording an exchange: its record's id, or why it could not be written. */
export type Recorded =
  | {
      readonly ok: true;
      readonly id: number;
      /** What the record holds: its secrets masked. */
      readonly facts: CallFacts;
    }
  | {
      readonly ok: false;
      /**
       * Because the database cannot be reached or the disk is full (the caller is told to try
       * again), not for a fault of the server's.
       */
      readonly unavailable: boolean;
    };

/**
 * The record of every call, whichever door it came in by: the exchange masked, then written with
 * the deliveries it queues in one commit, then counted; once committed, what waits for the commit
 * starts. The door answers only after this resolves, so a `200` means the call and its deliveries
 * are durable; when nothing could be written (`ok: false`) nothing may be reported as done.
 */
export async function recordExchange(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  ex: CallExchange,
): Promise<Recorded> {
  const body = ex.body;
  const facts = maskedFacts(request, ex, body);
  let id: number;
  try {
    // A canonical answer is recorded by reference: its id in place of its text.
    const ref = facts.canonical ? app.recorder.answers.refOf(facts.response) : undefined;
    const schoolId =
      ex.schoolId !== undefined
        ? ex.schoolId
        : await app.operations.schoolOf({
            operation: ex.operation,
            params: facts.params,
            callerIp: request.ip,
            // From the console without an operation run: no school was acted for.
            actingForSchoolId: ex.binding === 'console' ? null : undefined,
            staffSchoolIds: ex.binding === 'console' ? (request.staff?.schoolIds ?? null) : undefined,
          });
    id = await app.recorder.record(
      callRecord(
        request,
        reply,
        app.diskSpace.recordBytes(),
        facts,
        schoolId,
        ref instanceof Promise ? await ref : ref,
      ),
      ex.deliveries,
    );
  } catch (err) {
    if (body && typeof body === 'object' && 'destroy' in body && typeof body.destroy === 'function')
      body.destroy();
    const unavailable = isUnavailableError(err);
    // An outage is logged where it is seen (the store's watch, the disk check), not per call.
    if (!unavailable) request.log.error({ err }, 'could not record the call');
    observe(app, reply, ex, 'unrecorded');
    return { ok: false, unavailable };
  }
  observe(app, reply, ex, outcomeOf(ex.status, ex.outcome));
  ex.afterCommit?.();
  return { ok: true, id, facts };
}

/**
 * What the record keeps of an exchange, every auth code masked before anything is written
 * (docs/security.md#what-is-masked-and-where): the request line and headers (path parameters and
 * query included), the body whatever its shape or Content-Type, the user agent, the parameters,
 * and what the answer, the error and the note echo of the request. Masking runs on every call:
 * each pass is linear in the text (packages/asmx/src/mask.ts).
 */
function maskedFacts(request: FastifyRequest, ex: CallExchange, body: CallExchange['body']): CallFacts {
  // What was masked in the request, as the server may have decoded and echoed it (an operation
  // name from the path in an error, a parameter's value), and what a reader read.
  const found: string[] = [];
  const head = formatRequest(request.method, request.url, request.raw.httpVersion, request.headers, '');
  const read = ex.secretValues ?? [];
  const requestText =
    maskRequestText(head, SECRETS, found) + maskRequestBody(ex.requestBody, SECRETS, read, found);
  const userAgent = request.headers['user-agent'];
  const echoes = found.length === 0 ? read : [...read, ...echoForms(found, SECRETS)];
  let params: Record<string, string> | null = null;
  if (ex.params) {
    params = Object.create(null) as Record<string, string>;
    for (const name in ex.params) {
      const value = ex.params[name] as string;
      params[name] = value === MASK ? value : maskValues(maskRequestText(value, SECRETS), echoes);
    }
  }
  // A canonical answer was formatted and masked by name once (canonicalResponseOf): only what this
  // request may echo is left to mask, and when it masks nothing the text is the canonical one.
  const canonical = ex.canonicalResponse;
  const response =
    canonical === undefined
      ? maskAnswerText(
          formatResponse(ex.status, ex.headers, ex.recordedBody ?? recordedText(body)),
          SECRETS,
          echoes,
        )
      : maskValues(canonical, echoes);
  return {
    group: ex.group,
    operation: ex.operation,
    binding: ex.binding,
    params,
    outcome: ex.outcome,
    status: ex.status,
    error: ex.error === null ? null : maskAnswerText(ex.error, SECRETS, echoes),
    request: requestText,
    response,
    canonical: response === canonical,
    note: ex.note ? maskAnswerText(ex.note, SECRETS, echoes) : null,
    userAgent: userAgent === undefined ? null : maskRequestText(userAgent, SECRETS),
  };
}

/**
 * The record's text of an answer that is the same for every call of its kind (a success's, in its
 * binding: routes/asmx/answers.ts), built once: what maskedFacts makes of it before the request's
 * own echoes are masked. A call answered with it is recorded by reference when those mask nothing
 * (docs/architecture.md#the-path-of-a-call).
 */
export function canonicalResponseOf(
  status: number,
  headers: Readonly<Record<string, string>>,
  body: CallExchange['body'],
): string {
  return maskAnswerText(formatResponse(status, headers, recordedText(body)), SECRETS);
}

/** Every call is counted here, and only here, once its record was attempted (docs/monitoring.md#metrics). */
function observe(app: FastifyInstance, reply: FastifyReply, ex: CallExchange, outcome: CallOutcome): void {
  app.metrics.observeCall({
    operation: ex.operation,
    binding: ex.binding,
    outcome,
    seconds: reply.elapsedTime / 1000,
  });
}

/** A response body as the record shows it: text as is, an object as its JSON, a stream not at all. */
function recordedText(body: CallExchange['body']): string {
  if (body === undefined) return '';
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  return 'pipe' in body ? '' : JSON.stringify(body);
}
