import {
  ACTING_FOR_SCHOOL,
  type CallDelivery,
  callVerdict,
  maskParams,
  type OperationDef,
  operationByName,
  operationResultSchema,
  type Problem,
  problemSchema,
  sendSchoolListSchema,
} from '@school/contract';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problem, unavailableDetail } from '../../http/problem.js';
import type { OperationResult } from '../../operations/run.js';
import { type CallExchange, recordExchange } from '../../recording/exchange.js';
import type { Store } from '../../store/index.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';

/** The operations whose parameters name their school (`baseUrlSchool`): it decides whose they are. */
const NAMES_ITS_SCHOOL = new Set(['SendNotificationType', 'SendMarkNotes']);

/**
 * The school a console send acts for (the body's `schoolId`), as the staff user may name it: a
 * registered school, one of theirs when they are limited to schools, and required of them for an
 * operation that does not name its school. A refusal is the problem's status, detail and field.
 */
async function actingFor(
  store: Store,
  request: FastifyRequest,
  operation: string,
  given: unknown,
): Promise<{ ok: true; schoolId: number | null } | { ok: false; status: 400 | 403; detail: string }> {
  const scoped = request.staff?.schoolIds ?? null;
  if (given === undefined || given === null) {
    if (scoped && !NAMES_ITS_SCHOOL.has(operation)) {
      return {
        ok: false,
        status: 400,
        detail: 'Pick the school this is for: your account is limited to some schools.',
      };
    }
    return { ok: true, schoolId: null };
  }
  if (typeof given !== 'number' || !Number.isSafeInteger(given) || given <= 0) {
    return { ok: false, status: 400, detail: `Invalid ${ACTING_FOR_SCHOOL}: it must be a school’s id.` };
  }
  if (scoped && !scoped.includes(given)) {
    return {
      ok: false,
      status: 403,
      detail: 'You may not act for that school: your account is limited to other schools.',
    };
  }
  if (!(await store.schools.findById(given))) {
    return { ok: false, status: 400, detail: `There is no school with the id ${given}.` };
  }
  return { ok: true, schoolId: given };
}

/**
 * `POST /api/operations/{name}`: the console's door to the operations. It takes the same way as
 * the .asmx endpoints (the operation runs, its answer is built, the exchange is recorded by
 * recording/exchange.ts, then answered), records the call with binding `console`, and answers its
 * id. The staff user is not a caller: a school's `allowedIps` do not apply to them; a user limited
 * to schools sends for their own only (operations/schools.ts, `findSchoolFor`).
 */
export const operationRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();

  app.get(
    '/operations/schools',
    {
      schema: {
        summary: 'The schools one may send for',
        description:
          'The schools the logged-in user may send for, by name: every school for organisation-wide staff, their own for staff limited to schools.',
        tags: ['operations'],
        response: { 200: sendSchoolListSchema },
      },
    },
    async (request) => {
      const scoped = request.staff?.schoolIds ?? null;
      const rows = await app.store.schools.list();
      return {
        items: rows
          .filter((row) => scoped === null || scoped.includes(row.id))
          .map((row) => ({ id: row.id, name: row.name, baseUrl: row.base_url })),
        organisationWide: scoped === null,
      };
    },
  );

  app.post(
    '/operations/:name',
    {
      schema: {
        summary: 'Run an operation',
        description:
          'Runs one of the five operations exactly as the .asmx endpoints do, recorded as a `console` call. Parameters are strings, all required. `schoolId` (a number, beside them) names the school the call is for: required of staff limited to schools for AuthCode, GetBookPdfByTerm and pushNoti; SendNotificationType and SendMarkNotes are for the school their `baseUrlSchool` names. A school’s `allowedIps` do not apply to staff.',
        tags: ['operations'],
        params: z.object({ name: z.string().max(64) }),
        body: z.record(z.string(), z.unknown()).nullish(),
        response: {
          200: operationResultSchema,
          '4xx': problemSchema,
          500: problemSchema,
          503: problemSchema,
        },
      },
    },
    async (request, reply) => {
      // Sends the service cannot take now are refused before anything is written.
      const refusal = app.readiness.refusal();
      if (refusal) {
        app.metrics.observeRefusal(refusal.cause);
        return reply
          .code(503)
          .header('retry-after', String(refusal.retryAfterSeconds))
          .type(PROBLEM_TYPE)
          .send(problem(503, unavailableDetail(refusal.cause)));
      }
      const send = readSend(request.params.name, request.body ?? {});
      const ex = await exchangeOf(app, request, send);
      return recordAndAnswer(app, request, reply, send, ex);
    },
  );
};

/** A console send as its body has it. */
interface Send {
  /** The operation's name as asked for. */
  readonly name: string;
  readonly op: OperationDef | undefined;
  /** The operation's parameters given as strings. */
  readonly received: Readonly<Record<string, string>>;
  /** The first of its parameters given as something else, if one was. */
  readonly wrongType: string | undefined;
  /** The body's `schoolId`, as given. */
  readonly schoolGiven: unknown;
}

function readSend(name: string, body: Record<string, unknown>): Send {
  const op = operationByName(name);
  const received: Record<string, string> = Object.create(null);
  let wrongType: string | undefined;
  for (const param of op?.params ?? []) {
    const value = body[param.name];
    if (typeof value === 'string') received[param.name] = value;
    else if (value !== undefined && value !== null) wrongType ??= param.name;
  }
  return { name, op, received, wrongType, schoolGiven: body[ACTING_FOR_SCHOOL] };
}

/**
 * The exchange of a send, to record and answer: refused before it runs (no such operation, a
 * parameter not a string, a school the user may not act for), else what the operation made of it.
 */
async function exchangeOf(app: FastifyInstance, request: FastifyRequest, send: Send): Promise<CallExchange> {
  const { op, wrongType } = send;
  if (!op) return refusedExchange(send, 404, `There is no operation named '${send.name.slice(0, 64)}'.`);
  if (wrongType) {
    const detail = `Invalid ${wrongType}: it must be a string.`;
    return refusedExchange(send, 400, detail, { errors: { [wrongType]: detail } });
  }
  // The school the staff user acts for, checked once the operation and its parameters are.
  const acting = await actingFor(app.store, request, op.name, send.schoolGiven);
  if (!acting.ok) {
    return refusedExchange(send, acting.status, acting.detail, {
      errors: { [ACTING_FOR_SCHOOL]: acting.detail },
    });
  }
  const result = await app.operations.run(op, (n) => send.received[n], {
    callerIp: request.ip,
    staff: request.staff?.username,
    actingForSchoolId: acting.schoolId,
    staffSchoolIds: request.staff?.schoolIds ?? null,
    log: request.log,
  });
  // The school the call belongs to, as the operation decided it (operations/call-school.ts).
  return { ...ranExchange(send, result, request.id), schoolId: result.schoolId };
}

/** What every exchange of a send holds: its binding, operation and request as recorded. */
function exchangeBase(send: Send) {
  const { op, received, schoolGiven } = send;
  return {
    binding: 'console' as const,
    group: op?.group ?? '',
    operation: op?.name ?? null,
    requestBody: JSON.stringify({
      ...(op ? maskParams(op, received) : {}),
      ...(typeof schoolGiven === 'number' ? { [ACTING_FOR_SCHOOL]: schoolGiven } : {}),
    }),
  };
}

/** A send answered with a problem (RFC 9457): `detail` as its text and the call's error. */
function refusedExchange(
  send: Send,
  status: number,
  detail: string,
  extra: Partial<Problem> = {},
): CallExchange {
  return {
    ...exchangeBase(send),
    params: send.op ? maskParams(send.op, send.received) : null,
    outcome: status >= 500 ? 'server-error' : 'client-error',
    status,
    error: detail,
    headers: { 'content-type': PROBLEM_TYPE },
    body: problem(status, detail, extra),
  };
}

/** The exchange of a send its operation ran: what it did and queued, or its refusal or failure. */
function ranExchange(send: Send, result: OperationResult, requestId: string): CallExchange {
  const { params } = result;
  if (result.outcome === 'ok') {
    return {
      ...exchangeBase(send),
      params,
      outcome: 'ok',
      status: 200,
      error: null,
      headers: { 'content-type': JSON_TYPE },
      body: {
        outcome: 'ok',
        status: 200,
        message: result.note ?? 'Done.',
        queued: result.deliveries?.length ?? 0,
      },
      deliveries: result.deliveries,
      note: result.note ?? null,
      afterCommit: result.afterCommit,
    };
  }
  if (result.outcome === 'client-error') {
    return {
      ...refusedExchange(
        send,
        result.status,
        result.message,
        result.param ? { errors: { [result.param]: result.message } } : {},
      ),
      params,
      ...(result.retryAfter
        ? { headers: { 'content-type': PROBLEM_TYPE, 'retry-after': String(result.retryAfter) } }
        : {}),
    };
  }
  return { ...refusedExchange(send, 500, `An internal error occurred (request ${requestId}).`), params };
}

/**
 * Records the exchange and audits the send, then answers it with the call's id; when the record
 * could not be written, answers that nothing was done.
 */
async function recordAndAnswer(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  send: Send,
  ex: CallExchange,
) {
  const answer = ex.body as Record<string, unknown>;
  const recorded = await recordExchange(app, request, reply, ex);
  if (!recorded.ok) {
    return recorded.unavailable
      ? reply
          .code(503)
          .header('retry-after', '5')
          .type(PROBLEM_TYPE)
          .send(problem(503, unavailableDetail('database')))
      : reply
          .code(500)
          .type(PROBLEM_TYPE)
          .send(problem(500, 'The call could not be recorded; nothing was done.'));
  }
  const { id, facts } = recorded;
  // What the record holds, secrets masked; an unknown name is in its error, masked, not here.
  // Its result is the call's verdict as it stands when sent (queued, not sent yet): what
  // came of the SMS later is the call's page, which the entry's target links to.
  await app.audit(request, {
    action: 'send',
    target: `call ${id} (${send.op?.name ?? 'no such operation'})`,
    details: {
      result: callVerdict(facts, queuedOf(ex)).text,
      status: facts.status,
      ...(facts.params ? { params: facts.params } : {}),
      ...(facts.error ? { error: facts.error } : {}),
    },
  });
  // The stored answer goes without the id: it is not known until the record is written. (Its
  // shape is the response schema's, by the status; the schema checks it as it is sent.)
  const answered: unknown = ex.status === 200 ? { id, ...answer } : { ...answer, callId: id };
  return reply.code(ex.status).headers(ex.headers).send(answered);
}

/** Where what a send queued stands as it is answered: waiting for its first attempt. */
function queuedOf(ex: CallExchange): CallDelivery | null {
  const count = ex.deliveries?.length ?? 0;
  return count === 0 ? null : { state: 'waiting', count };
}
