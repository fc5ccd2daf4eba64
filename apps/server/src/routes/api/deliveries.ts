import {
  deliveryDetailSchema,
  deliveryListQuerySchema,
  deliveryListSchema,
  problemSchema,
} from '@school/contract';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problem, sendProblem } from '../../http/problem.js';
import { type DeliveryCursor, deliveryState } from '../../outbox/index.js';
import { toAttempt, toDelivery } from './row-mapping.js';
import { staffScope } from './staff-scope.js';

const idParams = z.object({ id: z.coerce.number().int().positive() });

/** Cursors are opaque to clients: base64url of `createdAt.id`. */
const encodeCursor = (cursor: DeliveryCursor): string =>
  Buffer.from(`${cursor.createdAt}.${cursor.id}`).toString('base64url');

function decodeCursor(text: string): DeliveryCursor | undefined {
  const match = /^(\d{1,16})\.(\d{1,16})$/.exec(Buffer.from(text, 'base64url').toString('latin1'));
  if (!match) return undefined;
  return { createdAt: Number(match[1]), id: Number(match[2]) };
}

/**
 * The outbox: deliveries with their attempts, and retries of dead ones; for a member of staff
 * limited to schools, their schools' only (staffScope): another school's delivery is a 404.
 */
export const deliveryRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { outbox, deliveryRollups } = app;

  app.get(
    '/deliveries',
    {
      schema: {
        summary: 'List deliveries, newest first',
        description:
          'Filters combine with AND. `status=logged` lists what the `log` provider wrote to the server log (nothing was sent); `status=sent` what a real provider accepted. `recipient` matches part of the phone or topic, any case. Pass `nextCursor` back as `cursor` for the next page. `counts` covers every delivery the user may see (their schools’ when their account is limited to some), whatever the filters.',
        tags: ['deliveries'],
        querystring: deliveryListQuerySchema,
        response: { 200: deliveryListSchema, 400: problemSchema },
      },
    },
    async (request, reply) => {
      const { limit, cursor, from, to, ...filters } = request.query;
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      if (cursor !== undefined && !after) {
        return sendProblem(
          reply,
          problem(400, 'The cursor is not one this API gave out.', { errors: { cursor: 'is invalid' } }),
        );
      }
      const scope = staffScope(request);
      const query = {
        ...filters,
        from: from === undefined ? undefined : Date.parse(from),
        to: to === undefined ? undefined : Date.parse(to),
        scope,
      };
      const rows = await outbox.deliveries.search(query, { limit: limit + 1, after });
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        items: page.map(toDelivery),
        nextCursor:
          rows.length > limit && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
        counts: await deliveryRollups.stateCounts(scope),
      };
    },
  );

  app.get(
    '/deliveries/:id',
    {
      schema: {
        summary: 'One delivery with its attempts',
        tags: ['deliveries'],
        params: idParams,
        response: { 200: deliveryDetailSchema, 404: problemSchema },
      },
    },
    async (request, reply) => {
      const row = await outbox.deliveries.findById(request.params.id, staffScope(request));
      if (!row) return sendProblem(reply, problem(404, `There is no delivery ${request.params.id}.`));
      const attempts = await outbox.deliveries.attemptsOf(row.id);
      return { ...toDelivery(row), attemptLog: attempts.map(toAttempt) };
    },
  );

  app.post(
    '/deliveries/:id/retry',
    {
      schema: {
        summary: 'Retry a dead delivery',
        description:
          'Back to pending with a fresh set of attempts. Only dead deliveries can be retried: an expired auth code is never sent late.',
        tags: ['deliveries'],
        params: idParams,
        response: { 200: deliveryDetailSchema, 404: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const scope = staffScope(request);
      const row = await outbox.deliveries.findById(id, scope);
      if (!row) return sendProblem(reply, problem(404, `There is no delivery ${id}.`));
      if (row.status === 'dead' && row.kind === 'sms' && row.secret === null) {
        return sendProblem(
          reply,
          problem(
            409,
            `SMS ${id} cannot be sent again: its code's validity has passed (an auth code is never sent late). The parent can ask for a new code.`,
          ),
        );
      }
      if (!(await outbox.resend(id))) {
        return sendProblem(
          reply,
          problem(409, `Delivery ${id} is ${deliveryState(row)}; only dead deliveries can be retried.`),
        );
      }
      await app.audit(request, { action: 'delivery-retry', target: `delivery ${id} (${row.recipient})` });
      const updated = await outbox.deliveries.findById(id, scope);
      const attempts = await outbox.deliveries.attemptsOf(id);
      return { ...toDelivery(updated ?? row), attemptLog: attempts.map(toAttempt) };
    },
  );

  app.post(
    '/deliveries/retry-dead',
    {
      schema: {
        summary: 'Retry every dead delivery',
        tags: ['deliveries'],
        response: { 200: z.object({ retried: z.number().int() }) },
      },
    },
    async (request) => {
      const retried = await outbox.resendAllDead(staffScope(request));
      await app.audit(request, { action: 'delivery-retry-dead', details: { retried } });
      return { retried };
    },
  );
};
