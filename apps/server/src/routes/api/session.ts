import {
  loginInputSchema,
  loginOptionsSchema,
  problemSchema,
  type Session,
  sessionSchema,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { secondFactorRequiredFor } from '../../auth/config.js';
import { createLogin } from '../../auth/login.js';
import type { Staff } from '../../auth/plugin.js';
import { createTrustedBrowsers } from '../../auth/trusted-browser.js';
import { problem, sendProblem } from '../../http/problem.js';
import { describeWait } from '../../limits/window.js';
import { type SessionMethod, schoolIdsOf, schoolIdsText, type UserRow } from '../../store/index.js';

const WRONG = 'Wrong username or password.';
const WRONG_CODE =
  'That code is not right, or was used already. Enter the code your authenticator app shows now, or one of your recovery codes.';

/**
 * A session as the login, the set-up and GET /api/session answer it. REQUIRE_TOTP asks a second
 * factor of password sessions only: single sign-on's are the identity provider's to protect.
 */
export function toSession(
  user: Pick<UserRow, 'id' | 'username' | 'display_name' | 'role' | 'school_ids'>,
  times: { readonly idleExpiresAt: number; readonly expiresAt: number },
  method: SessionMethod,
  secondFactor: { readonly enabled: boolean; readonly requireTotp: 'off' | 'admins' | 'all' },
): Session {
  return {
    user: {
      id: user.id,
      username: user.username,
      displayName: user.display_name,
      role: user.role,
      schoolIds: schoolIdsOf(user.school_ids)?.slice() ?? null,
    },
    idleExpiresAt: new Date(times.idleExpiresAt).toISOString(),
    expiresAt: new Date(times.expiresAt).toISOString(),
    method,
    secondFactor: {
      enabled: secondFactor.enabled,
      required: method === 'password' && secondFactorRequiredFor(secondFactor.requireTotp, user.role),
    },
  };
}

/**
 * Logging in and out, and who is logged in (docs/security.md). The login's rules — its limits,
 * the second factor, what is audited — are auth/login.ts's; here they become HTTP answers.
 */
export const sessionRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store, sessions, config } = app;
  const login = createLogin({
    store,
    config,
    sessions,
    secondFactor: app.secondFactor,
    browsers: createTrustedBrowsers({
      sealer: app.sealer,
      https: config.PUBLIC_BASE_URL?.startsWith('https:') ?? false,
    }),
    audit: app.audit,
  });

  const current = (staff: Staff): Session =>
    toSession(
      {
        id: staff.userId,
        username: staff.username,
        display_name: staff.displayName,
        role: staff.role,
        school_ids: schoolIdsText(staff.schoolIds),
      },
      {
        idleExpiresAt: Math.min(staff.lastSeenAt + sessions.idleMs, staff.expiresAt),
        expiresAt: staff.expiresAt,
      },
      staff.method,
      { enabled: staff.hasSecondFactor, requireTotp: config.REQUIRE_TOTP },
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
        description: `Answers the same for an unknown user and a wrong password. A user with a second factor gives its code too: without one the answer is 401 with \`secondFactorRequired\` and no session. Failed logins, wrong codes included, are limited per username from one address, per address, and per username, which past its limit is slowed rather than closed; a browser that logged in as the user before is held only to its own failures (429 with Retry-After). 403 when password logins are off (\`LOCAL_LOGIN=off\`).`,
        tags: ['session'],
        body: loginInputSchema,
        response: { 200: sessionSchema, 401: problemSchema, 403: problemSchema, 429: problemSchema },
      },
    },
    async (request, reply) => {
      const result = await login.attempt(request, reply, request.body);
      switch (result.outcome) {
        case 'password-logins-off':
          return sendProblem(
            reply,
            problem(
              403,
              `Password logins are turned off here: log in with ${app.singleSignOn?.label ?? 'single sign-on'}.`,
            ),
          );
        case 'too-many-failures':
          return sendProblem(
            reply.header('retry-after', String(Math.ceil(result.retryAfterMs / 1000))),
            problem(429, `Too many failed logins. Try again in ${describeWait(result.retryAfterMs)}.`),
          );
        case 'wrong-username-or-password':
          return sendProblem(reply, problem(401, WRONG));
        case 'code-needed':
          return sendProblem(
            reply,
            problem(401, 'Enter the code from your authenticator app.', { secondFactorRequired: true }),
          );
        case 'wrong-code':
          return sendProblem(
            reply,
            problem(401, WRONG_CODE, { secondFactorRequired: true, errors: { code: WRONG_CODE } }),
          );
        case 'logged-in':
          return toSession(result.user, result.times, 'password', {
            enabled: result.user.totp_secret !== null,
            requireTotp: config.REQUIRE_TOTP,
          });
      }
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
};
