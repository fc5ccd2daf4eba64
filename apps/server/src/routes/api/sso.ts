import { problemSchema, type SsoOutcome } from '@school/contract';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createAuditFold, FOLD_WINDOW_MS } from '../../auth/audit-fold.js';
import { FLOW_TTL_MS, SsoError, type SsoIdentity, schoolsOf } from '../../auth/oidc.js';
import { problem, sendProblem } from '../../http/problem.js';
import { schoolIdsOf, schoolIdsText, type UserRow, uniqueViolation } from '../../store/index.js';

/**
 * Single sign-on's two steps (docs/security.md#single-sign-on): `start` sends the browser to the
 * school's identity provider, `callback` is where it comes back. Both are plain browser
 * navigations; what goes wrong comes back to the login page as `?sso=` (SSO_OUTCOMES).
 */
export const ssoRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { sessions, config } = app;
  const flowCookie = flowCookieOf(config.PUBLIC_BASE_URL);
  const refusals = foldedRefusals(app);

  const notSetUp = (reply: FastifyReply) =>
    sendProblem(reply, problem(404, 'Single sign-on is not set up on this server (OIDC_ISSUER).'));
  const toLogin = (reply: FastifyReply, outcome: SsoOutcome, next?: string) => {
    const query = new URLSearchParams({ sso: outcome });
    if (next && next !== '/') query.set('next', next);
    return reply.redirect(`/login?${query}`, 303);
  };

  app.get(
    '/session/oidc/start',
    {
      config: { access: 'public' },
      schema: {
        summary: 'Log in with single sign-on',
        description:
          'Redirects to the school’s identity provider; it sends the browser back to /api/session/oidc/callback.',
        tags: ['session'],
        querystring: z.object({ next: z.string().max(2000).optional() }),
        response: { 404: problemSchema },
      },
    },
    async (request, reply) => {
      const sso = app.singleSignOn;
      if (!sso) return notSetUp(reply);
      try {
        const { url, flow } = await sso.begin(request.query.next ?? '/');
        reply.setCookie(flowCookie.name, flow, { ...flowCookie.options, maxAge: FLOW_TTL_MS / 1000 });
        return reply.redirect(url, 303);
      } catch (err) {
        request.log.warn({ err }, 'single sign-on could not start');
        return toLogin(reply, err instanceof SsoError ? err.outcome : 'failed', request.query.next);
      }
    },
  );

  app.get(
    '/session/oidc/callback',
    {
      config: { access: 'public' },
      schema: {
        summary: 'Where the identity provider sends the browser back',
        description:
          'Opens a session and redirects to the page the user was going to, or to the login page saying why not.',
        tags: ['session'],
        response: { 404: problemSchema },
      },
    },
    async (request, reply) => {
      const sso = app.singleSignOn;
      if (!sso) return notSetUp(reply);
      const flow = request.cookies[flowCookie.name];
      reply.clearCookie(flowCookie.name, flowCookie.options);
      let identity: SsoIdentity;
      let next: string;
      try {
        // The URL the provider redirected to, as it named it: PUBLIC_BASE_URL's, with the query.
        const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
        ({ identity, next } = await sso.complete(
          new URL(`${config.PUBLIC_BASE_URL}/api/session/oidc/callback${query}`),
          flow,
        ));
      } catch (err) {
        const outcome = err instanceof SsoError ? err.outcome : 'failed';
        request.log.debug({ err }, 'single sign-on did not complete');
        refusals.refused(request.ip, { reason: err instanceof Error ? err.message.slice(0, 300) : 'failed' });
        return toLogin(reply, outcome);
      }
      const refuse = async (outcome: SsoOutcome, reason: string, user?: UserRow) => {
        await app.audit(request, {
          action: 'sso-refused',
          ...(user ? { user } : { username: identity.username }),
          details: {
            reason,
            subject: identity.subject,
            claimValues: identity.claimValues,
            ...(identity.schoolValues ? { schoolValues: identity.schoolValues } : {}),
          },
        });
        return toLogin(reply, outcome, next);
      };
      const user = await userFor(app, request, identity, refuse);
      if ('redirected' in user) return user.redirected;
      await sessions.start(request, reply, user.row.id, 'sso');
      await app.audit(request, {
        action: 'sso-login',
        user: user.row,
        details: {
          role: user.row.role,
          ...(user.row.school_ids !== null ? { schoolIds: schoolIdsOf(user.row.school_ids) } : {}),
          ...(user.created ? { created: true } : {}),
        },
      });
      return reply.redirect(next, 303);
    },
  );
};

/**
 * The cookie that carries a sign-on's flow from `start` to `callback`. Lax, not Strict: the
 * callback is a navigation from the provider's site, and a Strict cookie would not come with it.
 * It holds no session: the flow's checks, sealed.
 */
function flowCookieOf(publicBaseUrl: string | undefined) {
  const https = publicBaseUrl?.startsWith('https:') ?? false;
  return {
    name: https ? '__Host-oidc-flow' : 'oidc-flow',
    options: { path: '/', httpOnly: true, sameSite: 'lax', secure: https } as const,
  };
}

/**
 * The audit of callbacks that do not complete: they need no account to cause, so their entries
 * are folded per address (auth/audit-fold.ts), flushed as the fold's window passes and on close.
 */
function foldedRefusals(app: FastifyInstance) {
  const refusals = createAuditFold(({ ip, details }) => {
    app.store.audit
      .add({ action: 'sso-refused', userId: null, username: null, ip: ip ?? '(many addresses)', details })
      .catch((err: unknown) => app.log.error({ err }, 'could not write the audit entry'));
    app.log.warn({ ip, details }, 'single sign-on did not complete');
  });
  const flushing = setInterval(() => refusals.flush(), FOLD_WINDOW_MS / 10);
  flushing.unref();
  app.addHook('onClose', async () => {
    clearInterval(flushing);
    refusals.flush(true);
  });
  return refusals;
}

/** Refuses a sign-on: audits why and sends the browser to the login page saying so. */
type Refuse = (outcome: SsoOutcome, reason: string, user?: UserRow) => Promise<FastifyReply>;

/**
 * The console user of a school account: made at its first login, its role, display name and
 * (OIDC_SCHOOLS_CLAIM) schools set again at each, the change audited. A role of none, a schools
 * claim naming no school, a disabled user, or a local user already holding the name: refused.
 */
async function userFor(
  app: FastifyInstance,
  request: FastifyRequest,
  identity: SsoIdentity,
  refuse: Refuse,
): Promise<{ row: UserRow; created: boolean } | { redirected: FastifyReply }> {
  const { config } = app;
  const existing = await app.store.users.findBySsoSubject(identity.subject);
  if (existing?.disabled) return { redirected: await refuse('disabled', 'account disabled', existing) };
  if (identity.role === null) {
    return {
      redirected: await refuse(
        'refused',
        `not in OIDC_ADMIN_GROUPS or OIDC_OPERATOR_GROUPS (claim ${config.OIDC_ROLES_CLAIM})`,
        existing,
      ),
    };
  }
  const schools = await schoolsClaimed(app, identity);
  if (schools === 'none') {
    const reason = `names no school by its topic key, nor OIDC_ALL_SCHOOLS_GROUPS (claim ${config.OIDC_SCHOOLS_CLAIM})`;
    return { redirected: await refuse('no-school', reason, existing) };
  }
  const profile = { role: identity.role, displayName: identity.displayName, schoolIds: schools };
  if (existing) return { row: await updatedUser(app, request, existing, profile), created: false };
  return createdUser(app, request, identity, profile, refuse);
}

/** What a sign-on says of its user: their role, display name, and schools (undefined: not said). */
interface SsoProfile {
  readonly role: UserRow['role'];
  readonly displayName: string;
  /** As the users table keeps them (null: every school); undefined: the Users page decides them. */
  readonly schoolIds: string | null | undefined;
}

/**
 * The schools the identity's claim gives, as the users table keeps them: undefined when
 * OIDC_SCHOOLS_CLAIM is unset, `none` when the claim names no school.
 */
async function schoolsClaimed(app: FastifyInstance, identity: SsoIdentity) {
  if (identity.schoolValues === undefined) return undefined;
  const given = schoolsOf(
    identity.schoolValues,
    app.config.OIDC_ALL_SCHOOLS_GROUPS,
    await app.store.schools.list(),
  );
  if (given === 'none') return 'none';
  return given === 'every' ? null : schoolIdsText(given);
}

/** A known user as the sign-on describes them now: what changed is saved and audited. */
async function updatedUser(
  app: FastifyInstance,
  request: FastifyRequest,
  existing: UserRow,
  { role, displayName, schoolIds }: SsoProfile,
): Promise<UserRow> {
  const changes: Record<string, unknown> = {};
  if (existing.role !== role) changes.role = { from: existing.role, to: role };
  if (schoolIds !== undefined && schoolIds !== existing.school_ids)
    changes.schoolIds = { from: schoolIdsOf(existing.school_ids), to: schoolIdsOf(schoolIds) };
  if (existing.display_name !== displayName)
    changes.displayName = { from: existing.display_name, to: displayName };
  if (Object.keys(changes).length === 0) return existing;
  await app.store.users.setSsoProfile(existing.id, {
    role,
    display_name: displayName,
    ...(schoolIds !== undefined ? { school_ids: schoolIds } : {}),
  });
  await app.audit(request, {
    action: 'user-update',
    user: existing,
    target: `user ${existing.id} (${existing.username})`,
    details: { ...changes, by: 'single sign-on' },
  });
  return {
    ...existing,
    role,
    display_name: displayName,
    school_ids: schoolIds === undefined ? existing.school_ids : schoolIds,
  };
}

/**
 * The user of an account's first login, made and audited; refused when a console user made here
 * holds the name.
 */
async function createdUser(
  app: FastifyInstance,
  request: FastifyRequest,
  identity: SsoIdentity,
  { role, displayName, schoolIds }: SsoProfile,
  refuse: Refuse,
): Promise<{ row: UserRow; created: boolean } | { redirected: FastifyReply }> {
  const { store } = app;
  const holder = await store.users.findByUsername(identity.username);
  if (holder) {
    return {
      redirected: await refuse(
        'conflict',
        `the username ${identity.username} belongs to a console user made here`,
      ),
    };
  }
  try {
    const row = await store.users.createSso({
      username: identity.username,
      display_name: displayName,
      role,
      sso_subject: identity.subject,
      school_ids: schoolIds ?? null,
    });
    await app.audit(request, {
      action: 'user-create',
      user: row,
      target: `user ${row.id} (${row.username})`,
      details: {
        displayName: row.display_name,
        role: row.role,
        schoolIds: schoolIdsOf(row.school_ids),
        by: 'single sign-on',
      },
    });
    return { row, created: true };
  } catch (err) {
    // Two first logins of one account at once: the other made it.
    const made = await store.users.findBySsoSubject(identity.subject);
    if (made) return { row: made, created: false };
    if (uniqueViolation(err) === 'users_username_key') {
      return { redirected: await refuse('conflict', `the username ${identity.username} is taken`) };
    }
    throw err;
  }
}
