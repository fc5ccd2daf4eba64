import {
  problemSchema,
  type User,
  userCreateInputSchema,
  userListSchema,
  userSchema,
  userUpdateInputSchema,
} from '@school/contract';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { hashPassword } from '../../auth/password.js';
import { problem, sendProblem } from '../../http/problem.js';
import { type UserRow, uniqueViolation } from '../../store/index.js';

const iso = (ms: number) => new Date(ms).toISOString();
const idParams = z.object({ id: z.coerce.number().int().positive() });

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    username: row.username,
    displayName: row.display_name,
    role: row.role,
    disabled: row.disabled === 1,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    lastLoginAt: row.last_login_at === null ? null : iso(row.last_login_at),
    secondFactor: row.totp_secret !== null,
    sso: row.sso_subject !== null,
    ssoSubject: row.sso_subject,
  };
}

/** Staff accounts: admins only (the scope's rule). */
export const userRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store } = app;

  app.get(
    '/users',
    { schema: { summary: 'List staff users', tags: ['users'], response: { 200: userListSchema } } },
    async () => ({ items: (await store.users.list()).map(toUser) }),
  );

  app.post(
    '/users',
    {
      schema: {
        summary: 'Add a staff user',
        tags: ['users'],
        body: userCreateInputSchema,
        response: { 201: userSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const { username, displayName, password, role } = request.body;
      if (await store.users.findByUsername(username)) {
        const message = `There is already a user named ${username}.`;
        return sendProblem(reply, problem(409, message, { errors: { username: message } }));
      }
      let row: UserRow;
      try {
        row = await store.users.create({
          username,
          display_name: displayName,
          role,
          password_hash: await hashPassword(password),
        });
      } catch (err) {
        if (uniqueViolation(err) === 'users_username_key') {
          const message = `There is already a user named ${username}.`;
          return sendProblem(reply, problem(409, message, { errors: { username: message } }));
        }
        throw err;
      }
      await app.audit(request, {
        action: 'user-create',
        target: `user ${row.id} (${row.username})`,
        details: { displayName, role },
      });
      return reply.code(201).send(toUser(row));
    },
  );

  app.patch(
    '/users/:id',
    {
      schema: {
        summary: 'Change a staff user',
        description:
          'Display name, role, disabled, or a new password. A new password or disabling ends the user’s sessions. The last enabled admin can be neither disabled nor made an operator.',
        tags: ['users'],
        params: idParams,
        body: userUpdateInputSchema,
        response: { 200: userSchema, 404: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const before = await store.users.findById(id);
      if (!before) return sendProblem(reply, problem(404, `There is no user ${id}.`));
      const { displayName, role, disabled, password } = request.body;
      if (password !== undefined && before.sso_subject !== null) {
        const message = 'This user logs in with single sign-on: there is no password here to set.';
        return sendProblem(reply, problem(409, message, { errors: { password: message } }));
      }
      const result = await store.users.update(id, {
        display_name: displayName,
        role,
        disabled,
        password_hash: password === undefined ? undefined : await hashPassword(password),
      });
      if (result === undefined) return sendProblem(reply, problem(404, `There is no user ${id}.`));
      if (result === 'last-admin') {
        return sendProblem(
          reply,
          problem(409, 'This is the last enabled admin: make another user an admin first.'),
        );
      }
      // A new password or a disabled account ends every session of the user; a new role applies
      // at once anyway (it is read with each request).
      if (password !== undefined || disabled === true) await store.sessions.removeForUser(id);
      const changes: Record<string, unknown> = {};
      if (displayName !== undefined && displayName !== before.display_name)
        changes.displayName = { from: before.display_name, to: displayName };
      if (role !== undefined && role !== before.role) changes.role = { from: before.role, to: role };
      if (disabled !== undefined && disabled !== (before.disabled === 1))
        changes.disabled = { from: before.disabled === 1, to: disabled };
      if (password !== undefined) changes.password = 'reset';
      await app.audit(request, {
        action: 'user-update',
        target: `user ${id} (${before.username})`,
        details: changes,
      });
      return toUser(result);
    },
  );

  app.delete(
    '/users/:id/totp',
    {
      schema: {
        summary: 'Reset a staff user’s second factor',
        description:
          'For a user who lost their authenticator app and recovery codes: the second factor is removed and their sessions end. They log in with their password alone, then set up a new one (at once, where REQUIRE_TOTP asks it of them).',
        tags: ['users'],
        params: idParams,
        response: { 200: userSchema, 404: problemSchema },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const before = await store.users.findById(id);
      if (!before) return sendProblem(reply, problem(404, `There is no user ${id}.`));
      await store.users.clearTotp(id);
      // The admin's own session goes on when they reset their own.
      const ended = await store.sessions.removeForUser(id, request.staff?.sessionId);
      await app.audit(request, {
        action: 'totp-reset',
        target: `user ${id} (${before.username})`,
        details: { hadSecondFactor: before.totp_secret !== null, sessionsEnded: ended },
      });
      const after = await store.users.findById(id);
      return toUser(after ?? before);
    },
  );
};
