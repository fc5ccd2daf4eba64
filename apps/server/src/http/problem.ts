import type { Problem } from '@school/contract';
import type { FastifyReply } from 'fastify';

const TITLES: Record<number, string> = {
  400: 'Invalid request',
  401: 'Not logged in',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Request too large',
  415: 'Unsupported media type',
  422: 'Unprocessable content',
  429: 'Too many requests',
  421: 'Misdirected request',
  500: 'Internal server error',
  503: 'Service unavailable',
  507: 'Insufficient storage',
};

/** An RFC 9457 problem with a title for its status. */
export function problem(status: number, detail: string, extra: Partial<Problem> = {}): Problem {
  return { type: 'about:blank', title: TITLES[status] ?? 'Error', status, detail, ...extra };
}

export function sendProblem(reply: FastifyReply, body: Problem): FastifyReply {
  return reply.code(body.status).type('application/problem+json').send(body);
}

/** What staff are told when the service cannot take work now; nothing was done. */
export function unavailableDetail(cause: 'database' | 'disk'): string {
  return cause === 'disk'
    ? 'The disk where the history is kept is nearly full: nothing was sent. Free some space, then try again.'
    : 'The database cannot be reached just now: nothing was done. Try again in a few seconds.';
}
