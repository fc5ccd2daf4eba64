import {
  passwordChangeInputSchema,
  problemSchema,
  recoveryCodesSchema,
  totpActivateInputSchema,
  totpDisableInputSchema,
  totpEnrolmentSchema,
  totpStartInputSchema,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { hashPassword, verifyPassword } from '../../auth/password.js';
import type { Staff } from '../../auth/plugin.js';
import { problem, sendProblem } from '../../http/problem.js';

const SSO_HAS_NO_PASSWORD =
  'You log in with the school’s single sign-on: your password and second factor are kept there, not here.';

const userTarget = (staff: Staff) => `user ${staff.userId} (${staff.username})`;

/**
 * One's own account, the console's Account page (docs/security.md#second-factor): one's password,
 * and setting up or turning off one's second factor. Their paths are under /api/session, where the
 * console and scripts call them. A user whom REQUIRE_TOTP asks for a second factor, and who has
 * none yet, can still reach these (`secondFactorSetup`).
 */
export const accountRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store } = app;

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
          'Your password confirms it (a stolen session alone cannot set one up). A new secret for an authenticator app, as base32 and as an otpauth:// URL (for a QR code). It takes effect once a code from it is sent to PUT /api/session/totp, which ends your other sessions.',
        tags: ['session'],
        body: totpStartInputSchema,
        response: { 200: totpEnrolmentSchema, 400: problemSchema, 409: problemSchema },
      },
    },
    async (request, reply) => {
      const staff = request.staff as Staff;
      const user = await store.users.findById(staff.userId);
      if (!user) return sendProblem(reply, problem(401, 'You are not logged in.'));
      if (user.sso_subject) return sendProblem(reply, problem(409, SSO_HAS_NO_PASSWORD));
      if (!(await verifyPassword(request.body.password, user.password_hash))) {
        const message = 'That is not your password.';
        return sendProblem(reply, problem(400, message, { errors: { password: message } }));
      }
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
      // Whoever else held a session of this user (a stolen cookie) is logged out by it.
      const ended = await store.sessions.removeForUser(staff.userId, staff.sessionId);
      await app.audit(request, {
        action: 'totp-enable',
        target: userTarget(staff),
        details: { otherSessionsEnded: ended },
      });
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
};
