import {
  loginInputSchema,
  loginOptionsSchema,
  passwordChangeInputSchema,
  problemSchema,
  recoveryCodesSchema,
  type Session,
  sessionSchema,
  setupInputSchema,
  setupStateSchema,
  totpActivateInputSchema,
  totpDisableInputSchema,
  totpEnrolmentSchema,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { secondFactorRequiredFor } from '../../auth/config.js';
import { decoyHash, hashPassword, verifyPassword } from '../../auth/password.js';
import type { Staff } from '../../auth/plugin.js';
import { problem, sendProblem } from '../../http/problem.js';
import { createLimiter, type LimitSpec } from '../../limits/limiter.js';
import { describeWait } from '../../limits/window.js';
import type { SessionMethod, UserRow } from '../../store/index.js';

const WRONG = 'Wrong username or password.';
const WRONG_CODE =
  'That code is not right, or was used already. Enter the code your authenticator app shows now, or one of your recovery codes.';

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
    method: SessionMethod,
    hasSecondFactor: boolean,
  ): Session => ({
    user: { id: user.id, username: user.username, displayName: user.display_name, role: user.role },
    idleExpiresAt: new Date(times.idleExpiresAt).toISOString(),
    expiresAt: new Date(times.expiresAt).toISOString(),
    method,
    secondFactor: {
      enabled: hasSecondFactor,
      required: method === 'password' && secondFactorRequiredFor(config.REQUIRE_TOTP, user.role),
    },
  });
  const current = (staff: Staff): Session =>
    sessionOf(
      { id: staff.userId, username: staff.username, display_name: staff.displayName, role: staff.role },
      {
        idleExpiresAt: Math.min(staff.lastSeenAt + sessions.idleMs, staff.expiresAt),
        expiresAt: staff.expiresAt,
      },
      staff.method,
      staff.hasSecondFactor,
    );
  const localLoginOff = () =>
    problem(
      403,
      `Password logins are turned off here: log in with ${app.singleSignOn?.label ?? 'single sign-on'}.`,
    );

  app.get(
    '/session/login-options',
    {
      config: { access: 'public' },
      schema: {
        summary: 'What the login page offers',
        tags: ['session'],
        response: { 200: loginOptionsSchema },
      },
    },
    async () => ({
      localLogin: config.LOCAL_LOGIN === 'on',
      sso: app.singleSignOn ? { label: app.singleSignOn.label } : null,
    }),
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
        description: `Answers the same for an unknown user and a wrong password. A user with a second factor gives its code too: without one the answer is 401 with \`secondFactorRequired\` and no session. Failed logins, wrong codes included, are limited per username and per address (429 with Retry-After). 403 when password logins are off (\`LOCAL_LOGIN=off\`).`,
        tags: ['session'],
        body: loginInputSchema,
        response: { 200: sessionSchema, 401: problemSchema, 403: problemSchema, 429: problemSchema },
      },
    },
    async (request, reply) => {
      const username = request.body.username.toLowerCase();
      if (config.LOCAL_LOGIN === 'off') {
        await app.audit(request, {
          action: 'login-failed',
          username,
          details: { reason: 'password logins are off' },
        });
        return sendProblem(reply, localLoginOff());
      }
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
      const code = request.body.code;
      let secondFactor: Record<string, unknown> = {};
      if (user.totp_secret) {
        if (!code) {
          // Not a failure: the console asks for the code next. The slot is handed back.
          await slot.release();
          return sendProblem(
            reply,
            problem(401, 'Enter the code from your authenticator app.', { secondFactorRequired: true }),
          );
        }
        // A wrong code keeps its slot: codes are guessed under the same limits as passwords.
        const check = await app.secondFactor.check(user, code);
        if (!check.ok) {
          await app.audit(request, { action: 'login-failed', user, details: { reason: check.reason } });
          return sendProblem(
            reply,
            problem(401, WRONG_CODE, { secondFactorRequired: true, errors: { code: WRONG_CODE } }),
          );
        }
        secondFactor = {
          secondFactor: check.by,
          ...(check.recoveryCodesLeft === undefined ? {} : { recoveryCodesLeft: check.recoveryCodesLeft }),
        };
      }
      // A success frees the slots it took and forgets this username's failures.
      await slot.release();
      await limiter.forget('login-user', username);
      const times = await sessions.start(request, reply, user.id, 'password');
      await app.audit(request, {
        action: 'login',
        user,
        ...(user.totp_secret ? { details: secondFactor } : {}),
      });
      return sessionOf(user, times, 'password', user.totp_secret !== null);
    },
  );

  app.delete(
    '/session',
    {
      config: { access: 'public', secondFactorSetup: true },
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
      config: { access: 'operator', secondFactorSetup: true },
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
      if (user?.sso_subject) return sendProblem(reply, problem(409, SSO_HAS_NO_PASSWORD));
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

  // --- one's own second factor ----------------------------------------------------------------
  app.post(
    '/session/totp',
    {
      config: { access: 'operator', secondFactorSetup: true },
      schema: {
        summary: 'Start setting up a second factor',
        description:
          'A new secret for an authenticator app, as base32 and as an otpauth:// URL (for a QR code). It takes effect once a code from it is sent to PUT /api/session/totp.',
        tags: ['session'],
        response: { 200: totpEnrolmentSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const staff = request.staff as Staff;
      const user = await store.users.findById(staff.userId);
      if (!user) return sendProblem(reply, problem(401, 'You are not logged in.'));
      if (user.sso_subject) return sendProblem(reply, problem(409, SSO_HAS_NO_PASSWORD));
      if (user.totp_secret) {
        return sendProblem(
          reply,
          problem(409, 'A second factor is set up already. Turn it off first to set up another.'),
        );
      }
      return app.secondFactor.begin(user);
    },
  );

  app.put(
    '/session/totp',
    {
      config: { access: 'operator', secondFactorSetup: true },
      schema: {
        summary: 'Turn the second factor on',
        description:
          'With a code from the authenticator app set up from POST /api/session/totp. Answers ten single-use recovery codes, shown this once.',
        tags: ['session'],
        body: totpActivateInputSchema,
        response: { 200: recoveryCodesSchema, 400: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const staff = request.staff as Staff;
      const result = await app.secondFactor.activate(staff.userId, request.body.code);
      if (result === 'nothing-pending') {
        return sendProblem(
          reply,
          problem(409, 'No second factor is being set up: start again from your Account page.'),
        );
      }
      if (result === 'wrong-code') {
        const message =
          'That is not the code the app shows now. Check the phone’s clock, and that the app has the new account.';
        return sendProblem(reply, problem(400, message, { errors: { code: message } }));
      }
      await app.audit(request, { action: 'totp-enable', target: userTarget(staff) });
      return result;
    },
  );

  app.delete(
    '/session/totp',
    {
      config: { access: 'operator', secondFactorSetup: true },
      schema: {
        summary: 'Turn your second factor off',
        description: 'Your password confirms it. Its recovery codes stop working too.',
        tags: ['session'],
        body: totpDisableInputSchema,
        response: { 204: z.null(), 400: problemSchema },
      },
    },
    async (request, reply) => {
      const staff = request.staff as Staff;
      const user = await store.users.findById(staff.userId);
      if (!user || !(await verifyPassword(request.body.password, user.password_hash))) {
        const message = 'That is not your password.';
        return sendProblem(reply, problem(400, message, { errors: { password: message } }));
      }
      await store.users.clearTotp(user.id);
      if (user.totp_secret) await app.audit(request, { action: 'totp-disable', target: userTarget(staff) });
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
      if (!app.firstAdminSetup.checkToken(request.body.token)) {
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
      app.firstAdminSetup.close();
      const times = await sessions.start(request, reply, user.id, 'password');
      await app.audit(request, {
        action: 'setup',
        user,
        target: `user ${user.id} (${user.username})`,
      });
      return sessionOf(user, times, 'password', false);
    },
  );
};

const SSO_HAS_NO_PASSWORD =
  'You log in with the school’s single sign-on: your password and second factor are kept there, not here.';

const userTarget = (staff: Staff) => `user ${staff.userId} (${staff.username})`;
