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
import { type Store, schoolIdsOf, schoolIdsText, type UserRow, uniqueViolation } from '../../store/index.js';

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
    schoolIds: schoolIdsOf(row.school_ids)?.slice() ?? null,
  };
}

/**
 * The column's text for the schools an admin gave (absent: undefined, no change; empty or null:
 * every school), or the ids no school has (a 400 names them).
 */
async function schoolsGiven(
  store: Store,
  ids: readonly number[] | null | undefined,
): Promise<{ text: string | null | undefined } | { unknown: number[] }> {
  if (ids === undefined) return { text: undefined };
  if (ids === null || ids.length === 0) return { text: null };
  const known = new Set((await store.schools.list()).map((s) => s.id));
  const unknown = [...new Set(ids)].filter((id) => !known.has(id));
  return unknown.length > 0 ? { unknown } : { text: schoolIdsText(ids) };
}

/** The 400 naming the school ids that no school has. */
function unknownSchools(ids: readonly number[]) {
  const message =
    ids.length === 1
      ? `There is no school with the id ${ids[0]}.`
      : `There are no schools with the ids ${ids.join(', ')}.`;
  return problem(400, message, { errors: { schoolIds: message } });
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
        response: { 201: userSchema, 400: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const { username, displayName, password, role } = request.body;
      if (await store.users.findByUsername(username)) {
        const message = `There is already a user named ${username}.`;
        return sendProblem(reply, problem(409, message, { errors: { username: message } }));
      }
      const schools = await schoolsGiven(store, request.body.schoolIds ?? null);
      if ('unknown' in schools) return sendProblem(reply, unknownSchools(schools.unknown));
      let row: UserRow;
      try {
        row = await store.users.create({
          username,
          display_name: displayName,
          role,
          password_hash: await hashPassword(password),
          school_ids: schools.text ?? null,
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
        details: { displayName, role, schoolIds: schoolIdsOf(row.school_ids) },
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
          'Display name, role, disabled, the schools the user is limited to (`schoolIds`; empty or null: every school), or a new password. A new password or disabling ends the user’s sessions; a new role or new schools hold from the user’s next request. The last enabled organisation-wide admin can be neither disabled, made an operator, nor limited to schools.',
        tags: ['users'],
        params: idParams,
        body: userUpdateInputSchema,
        response: { 200: userSchema, 400: problemSchema, 404: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const before = await store.users.findById(id);
      if (!before) return sendProblem(reply, problem(404, `There is no user ${id}.`));
      const { displayName, role, disabled, password } = request.body;
      const schools = await schoolsGiven(store, request.body.schoolIds);
      if ('unknown' in schools) return sendProblem(reply, unknownSchools(schools.unknown));
      if (password !== undefined && before.sso_subject !== null) {
        const message = 'This user logs in with single sign-on: there is no password here to set.';
        return sendProblem(reply, problem(409, message, { errors: { password: message } }));
      }
      const result = await store.users.update(id, {
        display_name: displayName,
        role,
        disabled,
        password_hash: password === undefined ? undefined : await hashPassword(password),
        school_ids: schools.text,
      });
      if (result === undefined) return sendProblem(reply, problem(404, `There is no user ${id}.`));
      if (result === 'last-admin') {
        return sendProblem(
          reply,
          problem(
            409,
            'This is the last enabled admin of every school: make another user an admin of every school first.',
          ),
        );
      }
      // A new password or a disabled account ends every session of the user; a new role or new
      // schools apply at once anyway (read with each request; a live feed or export under way
      // ends, auth/sessions.ts `lasts`).
      if (password !== undefined || disabled === true) await store.sessions.removeForUser(id);
      const changes: Record<string, unknown> = {};
      if (displayName !== undefined && displayName !== before.display_name)
        changes.displayName = { from: before.display_name, to: displayName };
      if (role !== undefined && role !== before.role) changes.role = { from: before.role, to: role };
      if (disabled !== undefined && disabled !== (before.disabled === 1))
        changes.disabled = { from: before.disabled === 1, to: disabled };
      if (schools.text !== undefined && schools.text !== before.school_ids)
        changes.schoolIds = { from: schoolIdsOf(before.school_ids), to: schoolIdsOf(schools.text) };
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
