import type { Role } from '@school/contract';
import type { FastifyInstance, FastifyPluginAsync, RouteOptions } from 'fastify';

/**
 * Who may call a route (docs/security.md): `public` anyone; `operator` any logged-in staff
 * user; `admin` admins only. Every route declares one; the server refuses to start otherwise.
 */
export type Access = 'public' | 'operator' | 'admin';

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
    /** Answered to a user who must still set up a second factor (REQUIRE_TOTP): setting it up, logging out. */
    secondFactorSetup?: boolean;
    /**
     * A page a browser opens (the API's documentation): without a session, a GET asking for HTML
     * is sent to the console's login with the page as `next`, rather than answered 401.
     */
    loginPage?: boolean;
  }
  interface FastifyInstance {
    /** Every route registered, as Fastify saw it, for the route-matrix test and start-up checks. */
    readonly routeTable: readonly RouteOptions[];
  }
}

/** The access rule's refusals (the route-matrix test tells them from a route's own answers). */
export const NOT_LOGGED_IN = 'Log in to continue: your session has ended or you are not logged in.';
export const ROLE_REFUSED = 'Your role does not allow this. Ask an admin.';
export const SCOPE_REFUSED =
  'Your account is limited to some schools: this is for admins of every school. Ask one of them.';
export const SECOND_FACTOR_FIRST =
  'Set up a second factor first, on your Account page: a second factor is required for your role.';

const RANK: Record<Access, number> = { public: 0, operator: 1, admin: 2 };

/** Whether a role ranks high enough for a route's rule. */
export const roleAllows = (role: Role, access: Access): boolean => RANK[role] >= RANK[access];

/**
 * The role a user acts with: an admin limited to schools acts as an operator does, for their
 * schools, and nothing organisation-wide (schools, templates, books, users, the service's set-up;
 * docs/security.md#who-sees-what).
 */
export const actingRole = (staff: {
  readonly role: Role;
  readonly schoolIds: readonly number[] | null;
}): Role => (staff.schoolIds === null ? staff.role : 'operator');

/**
 * Keeps the table of every route registered and refuses to start when one has no access rule.
 * Called before any route is registered.
 */
export function keepRouteTable(app: FastifyInstance): void {
  const routes: RouteOptions[] = [];
  app.decorate('routeTable', routes);
  app.addHook('onRoute', (route) => {
    routes.push(route);
  });
  app.addHook('onReady', async () => {
    // Checked once every plugin has added its routes (scopes set their default after this
    // hook ran, on the same options object).
    const missing = routes.filter((r) => r.config?.access === undefined);
    if (missing.length > 0) {
      const list = missing.map((r) => `${String(r.method)} ${r.url}`).join(', ');
      throw new Error(`Routes without an access rule: ${list}`);
    }
  });
}

/**
 * Registers `routes` in a scope whose routes get `access` unless they declare their own: each
 * group of routes gets its rule where it is registered (app.ts, routes/api/plugin.ts).
 */
export function withAccess<Options extends Record<string, unknown>>(
  access: Access,
  routes: FastifyPluginAsync<Options>,
): FastifyPluginAsync<Options> {
  return async (scope, options) => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, access: route.config?.access ?? access };
    });
    await scope.register(routes, options);
  };
}
