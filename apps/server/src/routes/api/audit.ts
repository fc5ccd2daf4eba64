import { type AuditEntry, auditListSchema, auditQuerySchema, problemSchema } from '@school/contract';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { problem, sendProblem } from '../../http/problem.js';
import type { AuditRow } from '../../store/index.js';

const iso = (ms: number) => new Date(ms).toISOString();

export function toAuditEntry(row: AuditRow): AuditEntry {
  let details: Record<string, unknown> | null = null;
  if (row.details) {
    try {
      details = JSON.parse(row.details) as Record<string, unknown>;
    } catch {
      details = { text: row.details };
    }
  }
  return {
    id: row.id,
    at: iso(row.at),
    userId: row.user_id,
    username: row.username,
    ip: row.ip,
    action: row.action,
    target: row.target,
    details,
  };
}

/**
 * The audit log, what staff did in the console: all of it for admins of every school; anyone else
 * (operators, staff limited to schools) sees the entries of their own actions only
 * (docs/security.md#who-sees-what).
 */
export const auditRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store } = app;

  app.get(
    '/audit',
    {
      schema: {
        summary: 'The audit log, newest first',
        description:
          'Every entry for an admin of every school; for anyone else, the entries of their own actions only.',
        tags: ['audit'],
        querystring: auditQuerySchema,
        response: { 200: auditListSchema, 400: problemSchema },
      },
    },
    async (request, reply) => {
      const { limit, cursor, user, action, from, to } = request.query;
      const before = cursor === undefined ? undefined : Number(cursor);
      if (cursor !== undefined && !(Number.isInteger(before) && (before as number) > 0)) {
        return sendProblem(
          reply,
          problem(400, 'The cursor is not one this API gave out.', { errors: { cursor: 'is invalid' } }),
        );
      }
      const staff = request.staff;
      const everyone = staff?.role === 'admin' && staff.schoolIds === null;
      const rows = await store.audit.search(
        {
          // Anyone but an admin of every school reads their own actions, whatever they asked.
          userId: everyone ? undefined : (staff?.userId ?? -1),
          username: user,
          action,
          from: from === undefined ? undefined : Date.parse(from),
          to: to === undefined ? undefined : Date.parse(to),
        },
        { limit: limit + 1, before },
      );
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        items: page.map(toAuditEntry),
        nextCursor: rows.length > limit && last ? String(last.id) : null,
      };
    },
  );
};
