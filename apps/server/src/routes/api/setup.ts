import { problemSchema, sessionSchema, setupInputSchema, setupStateSchema } from '@school/contract';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { hashPassword } from '../../auth/password.js';
import { problem, sendProblem } from '../../http/problem.js';
import { toSession } from './session.js';

const ALREADY_MADE = 'The first admin already exists. Log in instead.';

/**
 * The first admin's set-up (docs/security.md#staff-accounts-and-sessions): while no staff user
 * exists, whoever has the one-time link the server logged (auth/first-admin.ts) makes the first
 * admin, and is logged in as it.
 */
export const setupRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store, sessions, config } = app;

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
      if ((await store.users.count()) > 0) return sendProblem(reply, problem(409, ALREADY_MADE));
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
      // A set-up racing this one made the first user since the count: createFirst makes one at most.
      if (!user) return sendProblem(reply, problem(409, ALREADY_MADE));
      app.firstAdminSetup.close();
      const times = await sessions.start(request, reply, user.id, 'password');
      await app.audit(request, {
        action: 'setup',
        user,
        target: `user ${user.id} (${user.username})`,
      });
      return toSession(user, times, 'password', { enabled: false, requireTotp: config.REQUIRE_TOTP });
    },
  );
};
