import {
  loginInputSchema,
  passwordChangeInputSchema,
  problemSchema,
  type Session,
  sessionSchema,
  setupInputSchema,
  setupStateSchema,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { decoyHash, hashPassword, verifyPassword } from '../auth/password.js';
import type { Staff } from '../auth/plugin.js';
import { createLimiter, type LimitSpec } from '../limits/limiter.js';
import { describeWait } from '../limits/window.js';
import type { UserRow } from '../store/index.js';
import { problem, sendProblem } from './problem.js';

const WRONG = 'Wrong username or password.';

/**
 * Logging in and out, one's own password, and the first admin's set-up (docs/security.md).
 * Failed logins are limited per username and per address; a slot is taken before the password
 * is checked, so a burst of guesses sent at once cannot exceed the limit.
 */
export const sessionRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store, sessions, config } = app;
  // Shared by every instance on PostgreSQL, so N instances do not allow N times the guesses.
  const limiter = createLimiter(store);
  const loginLimits = (username: string, ip: string): LimitSpec[] => [
    ...(config.LOGIN_LIMIT_PER_USER
      ? [{ dimension: 'login-user', key: username, limit: config.LOGIN_LIMIT_PER_USER }]
      : []),
    ...(config.LOGIN_LIMIT_PER_IP
      ? [{ dimension: 'login-ip', key: ip, limit: config.LOGIN_LIMIT_PER_IP }]
      : []),
  ];

  const sessionOf = (
    user: Pick<UserRow, 'id' | 'username' | 'display_name' | 'role'>,
    times: { idleExpiresAt: number; expiresAt: number },
  ): Session => ({
    user: { id: user.id, username: user.username, displayName: user.display_name, role: user.role },
    idleExpiresAt: new Date(times.idleExpiresAt).toISOString(),
    expiresAt: new Date(times.expiresAt).toISOString(),
  });
  const current = (staff: Staff): Session =>
    sessionOf(
      { id: staff.userId, username: staff.username, display_name: staff.displayName, role: staff.role },
      {
        idleExpiresAt: Math.min(staff.lastSeenAt + sessions.idleMs, staff.expiresAt),
        expiresAt: staff.expiresAt,
      },
    );

  app.get(
    '/session',
    {
      config: { access: 'public' },
      schema: {
        summary: 'Who is logged in',
        tags: ['session'],
        response: { 200: sessionSchema, 401: problemSchema },
      },
    },
    async (request, reply) => {
      const staff = await sessions.read(request);
      if (!staff) return sendProblem(reply, problem(401, 'You are not logged in.'));
      return current(staff);
    },
  );

  app.post(
    '/session',
    {
      config: { access: 'public' },
      schema: {
        summary: 'Log in',
        description: `Answers the same for an unknown user and a wrong password. Failed logins are limited per username and per address (429 with Retry-After).`,
        tags: ['session'],
        body: loginInputSchema,
        response: { 200: sessionSchema, 401: problemSchema, 429: problemSchema },
      },
    },
    async (request, reply) => {
      const username = request.body.username.toLowerCase();
      const slot = await limiter.take(loginLimits(username, request.ip));
      if (!slot.ok) {
        const seconds = Math.ceil(slot.retryAfterMs / 1000);
        await app.audit(request, {
          action: 'login-failed',
          username,
          details: { reason: 'too many failed logins' },
        });
        return sendProblem(
          reply.header('retry-after', String(seconds)),
          problem(429, `Too many failed logins. Try again in ${describeWait(slot.retryAfterMs)}.`),
        );
      }
      const user = await store.users.findByUsername(username);
      // An unknown user costs the same time as a wrong password.
      const ok = await verifyPassword(request.body.password, user?.password_hash ?? (await decoyHash()));
      if (!user || !ok || user.disabled) {
        await app.audit(request, {
          action: 'login-failed',
          ...(user ? { user } : { username }),
          details: { reason: !user ? 'unknown user' : !ok ? 'wrong password' : 'account disabled' },
        });
        return sendProblem(reply, problem(401, WRONG));
      }
      // A success frees the slots it took and forgets this username's failures.
      await slot.release();
      await limiter.forget('login-user', username);
      const times = await sessions.start(request, reply, user.id);
      await app.audit(request, { action: 'login', user });
      return sessionOf(user, times);
    },
  );

  app.delete(
    '/session',
    {
      config: { access: 'public' },
      schema: { summary: 'Log out', tags: ['session'], response: { 204: z.null() } },
    },
    async (request, reply) => {
      request.staff = await sessions.read(request);
      if (await sessions.end(request, reply)) {
        if (request.staff) await app.audit(request, { action: 'logout' });
      }
      return (reply as FastifyReply).code(204).send();
    },
  );

  app.put(
    '/session/password',
    {
      config: { access: 'operator' },
      schema: {
        summary: 'Change your own password',
        description: 'Your other sessions end; this one goes on.',
        tags: ['session'],
        body: passwordChangeInputSchema,
        response: { 204: z.null(), 400: problemSchema },
      },
    },
    async (request, reply) => {
      const staff = request.staff as Staff;
      const user = await store.users.findById(staff.userId);
      if (!user || !(await verifyPassword(request.body.currentPassword, user.password_hash))) {
        const message = 'That is not your current password.';
        return sendProblem(reply, problem(400, message, { errors: { currentPassword: message } }));
      }
      await store.users.update(user.id, { password_hash: await hashPassword(request.body.newPassword) });
      const ended = await store.sessions.removeForUser(user.id, staff.sessionId);
      await app.audit(request, { action: 'password-change', details: { otherSessionsEnded: ended } });
      return (reply as FastifyReply).code(204).send();
    },
  );

  // --- the first admin -------------------------------------------------------------------------
  app.get(
    '/setup',
    {
      config: { access: 'public' },
      schema: {
        summary: 'Whether the first admin is still to be made',
        tags: ['session'],
        response: { 200: setupStateSchema },
      },
    },
    async () => ({ needed: (await store.users.count()) === 0 }),
  );

  app.post(
    '/setup',
    {
      config: { access: 'public' },
      schema: {
        summary: 'Make the first admin',
        description:
          'With the one-time token from the URL the server logged at start (valid one hour). Logs in.',
        tags: ['session'],
        body: setupInputSchema,
        response: { 200: sessionSchema, 403: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      if ((await store.users.count()) > 0) {
        return sendProblem(reply, problem(409, 'The first admin already exists. Log in instead.'));
      }
      if (!sessions.checkSetupToken(request.body.token)) {
        return sendProblem(
          reply,
          problem(
            403,
            'This set-up link is not valid or has expired. Restart the server for a new one (it is in the log).',
          ),
        );
      }
      const { username, displayName, password } = request.body;
      const user = await store.users.createFirst({
        username,
        display_name: displayName,
        role: 'admin',
        password_hash: await hashPassword(password),
      });
      if (!user) return sendProblem(reply, problem(409, 'The first admin already exists. Log in instead.'));
      sessions.closeSetup();
      const times = await sessions.start(request, reply, user.id);
      await app.audit(request, {
        action: 'setup',
        user,
        target: `user ${user.id} (${user.username})`,
      });
      return sessionOf(user, times);
    },
  );
};
