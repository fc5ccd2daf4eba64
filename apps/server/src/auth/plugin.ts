import cookie from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { problem, sendProblem } from '../http/problem.js';
import type { Access } from './access.js';
import {
  actingRole,
  keepRouteTable,
  NOT_LOGGED_IN,
  ROLE_REFUSED,
  roleAllows,
  SCOPE_REFUSED,
  SECOND_FACTOR_FIRST,
} from './access.js';
import { HOST_REFUSED, hostAllowList, hostName } from './allowed-hosts.js';
import { createAudit } from './audit.js';
import { secondFactorRequiredFor } from './config.js';
import { crossSiteRefusal } from './cross-site.js';
import { setUpFirstAdmin } from './first-admin.js';
import { createSingleSignOn, type SingleSignOn } from './oidc.js';
import { createSecondFactor, type SecondFactor } from './second-factor.js';
import { createSessionManager, sweepEndedSessions } from './sessions.js';

export type { Access } from './access.js';
export {
  actingRole,
  NOT_LOGGED_IN,
  ROLE_REFUSED,
  SCOPE_REFUSED,
  SECOND_FACTOR_FIRST,
  withAccess,
} from './access.js';
export type { AuditInput } from './audit.js';
export type { SessionManager, Staff } from './sessions.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The second factor of password logins. */
    readonly secondFactor: SecondFactor;
    /** Single sign-on with the school's identity provider; undefined when OIDC_ISSUER is not set. */
    readonly singleSignOn: SingleSignOn | undefined;
  }
}

/**
 * Staff sign-in and every request's checks (docs/security.md), each concern in its own module:
 * the route access table (access.ts), sessions (sessions.ts), the audit log (audit.ts), the Host
 * allow-list (allowed-hosts.ts), the cross-site rule (cross-site.ts), the first admin
 * (first-admin.ts), the second factor and single sign-on. Registered at the root before any
 * route, so that its hooks see every route and every request.
 */
export const authPlugin = fp(
  async (app) => {
    const { config, store } = app;
    const allowedHosts = hostAllowList(config);

    await app.register(cookie);
    app.decorateRequest('staff', null);
    keepRouteTable(app);

    const sessions = createSessionManager({
      store,
      https: config.PUBLIC_BASE_URL?.startsWith('https:') ?? false,
      idleMs: config.SESSION_IDLE_TIMEOUT,
      maxAgeMs: config.SESSION_MAX_AGE,
      mustHaveSecondFactor: (role) => secondFactorRequiredFor(config.REQUIRE_TOTP, role),
      passwordSessions: config.LOCAL_LOGIN === 'on',
    });
    app.decorate('sessions', sessions);
    app.decorate('audit', createAudit(store));
    app.decorate(
      'secondFactor',
      createSecondFactor({
        store,
        sealer: app.sealer,
        issuer: config.PUBLIC_BASE_URL
          ? `School console (${new URL(config.PUBLIC_BASE_URL).hostname})`
          : 'School console',
      }),
    );
    app.decorate(
      'singleSignOn',
      config.OIDC_ISSUER && config.OIDC_CLIENT_ID && config.OIDC_CLIENT_SECRET && config.PUBLIC_BASE_URL
        ? createSingleSignOn(
            {
              issuer: config.OIDC_ISSUER,
              clientId: config.OIDC_CLIENT_ID,
              clientSecret: config.OIDC_CLIENT_SECRET,
              label: config.OIDC_LABEL,
              scopes: config.OIDC_SCOPES,
              rolesClaim: config.OIDC_ROLES_CLAIM,
              adminGroups: config.OIDC_ADMIN_GROUPS,
              operatorGroups: config.OIDC_OPERATOR_GROUPS,
              schoolsClaim: config.OIDC_SCHOOLS_CLAIM,
              redirectUri: `${config.PUBLIC_BASE_URL}/api/session/oidc/callback`,
            },
            app.sealer,
          )
        : undefined,
    );

    // Every request, in this order: Host, Origin, session, role, second factor. Every rule reads
    // the route the router chose (its config), never the URL's text. Synchronous (callback style)
    // up to the session: a public route (the .asmx endpoints, the probes) goes on without the
    // promise and the turn of the microtask queue an async hook costs every request.
    app.addHook('onRequest', (request, reply, done) => {
      const route = request.is404 ? undefined : request.routeOptions.config;
      if (allowedHosts && !route?.anyHost && !allowedHosts.has(hostName(request.host))) {
        request.log.warn({ host: request.host.slice(0, 200) }, 'Host not allowed (see ALLOWED_HOSTS)');
        reply.code(421).header('connection', 'close').type('text/plain; charset=utf-8').send(HOST_REFUSED);
        return;
      }
      if (route?.consoleOnly) {
        const refusal = crossSiteRefusal(request, config.PUBLIC_BASE_URL);
        if (refusal) {
          sendProblem(reply, problem(403, refusal));
          return;
        }
      }
      // Paths no route matches get their 404 (or the console's page) without a session.
      const access = route ? (route.access ?? 'admin') : 'public';
      if (access === 'public') return done();
      // Fastify waits for the promise, as for an async hook.
      return staffChecks(request, reply, route, access);
    });

    /** The session, the role, the second factor: for a route that is not public. */
    async function staffChecks(
      request: FastifyRequest,
      reply: FastifyReply,
      route: FastifyRequest['routeOptions']['config'] | undefined,
      access: Exclude<Access, 'public'>,
    ) {
      const staff = await sessions.read(request);
      if (!staff) {
        if (route?.loginPage && request.method === 'GET' && wantsPage(request.headers.accept)) {
          return reply.redirect(`/login?next=${encodeURIComponent(request.url)}`, 303);
        }
        return sendProblem(reply, problem(401, NOT_LOGGED_IN));
      }
      request.staff = staff;
      if (!roleAllows(staff.role, access)) return sendProblem(reply, problem(403, ROLE_REFUSED));
      if (!roleAllows(actingRole(staff), access)) return sendProblem(reply, problem(403, SCOPE_REFUSED));
      if (staff.mustSetUpSecondFactor && !route?.secondFactorSetup) {
        return sendProblem(reply, problem(403, SECOND_FACTOR_FIRST, { secondFactorSetupRequired: true }));
      }
    }

    setUpFirstAdmin(app);
    sweepEndedSessions(app, config.SESSION_IDLE_TIMEOUT);
  },
  { name: 'auth', dependencies: ['config', 'store', 'secrets'] },
);

/** A browser navigating (its Accept names HTML), not a script asking for data. */
const wantsPage = (accept: string | undefined): boolean => accept?.includes('text/html') === true;
