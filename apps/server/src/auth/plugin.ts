import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import cookie from '@fastify/cookie';
import { CSRF_HEADER, type Role } from '@school/contract';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { problem, sendProblem } from '../api/problem.js';
import {
  isUnavailableError,
  type NewAuditEntry,
  type SessionMethod,
  type SessionWithUser,
} from '../store/index.js';
import { secondFactorRequiredFor } from './config.js';
import { createSingleSignOn, type SingleSignOn } from './oidc.js';
import { hashPassword } from './password.js';
import { createSecondFactor, type SecondFactor } from './second-factor.js';

/**
 * Who may call a route (docs/security.md): `public` anyone; `operator` any logged-in staff
 * user; `admin` admins only. Every route declares one; the server refuses to start otherwise.
 */
export type Access = 'public' | 'operator' | 'admin';

/** The logged-in staff user of a request. */
export interface Staff {
  readonly sessionId: string;
  readonly userId: number;
  readonly username: string;
  readonly displayName: string;
  readonly role: Role;
  readonly createdAt: number;
  readonly lastSeenAt: number;
  readonly expiresAt: number;
  readonly method: SessionMethod;
  /** A second factor is set up for the user's password logins. */
  readonly hasSecondFactor: boolean;
  /**
   * REQUIRE_TOTP asks a second factor of this user, this session was opened with a password, and
   * none is set up: only the routes for setting one up answer (`secondFactorSetup`).
   */
  readonly mustSetUpSecondFactor: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
    /**
     * State-changing requests to this route must come from the console's own page (the CSRF
     * rule): set on every /api route where the API is registered, read here from the route the
     * router chose, never from the URL's text (`/%61pi/…` reaches the same route as `/api/…`).
     */
    consoleOnly?: boolean;
    /** Answered whatever Host the request names (probes and scrapers): /healthz, /readyz, /metrics. */
    anyHost?: boolean;
    /** Answered to a user who must still set up a second factor (REQUIRE_TOTP): setting it up, logging out. */
    secondFactorSetup?: boolean;
  }
  interface FastifyRequest {
    /** The logged-in staff user, on routes that need one; null on public routes without a session. */
    staff: Staff | null;
  }
  interface FastifyInstance {
    /** Every route registered, as Fastify saw it, for the route-matrix test and start-up checks. */
    readonly routeTable: readonly RouteOptions[];
    /** Sessions: start one (login), end one, read the one a request carries. */
    readonly sessions: SessionManager;
    /**
     * Records a console action in the audit log, with the request's address and user (or `user`,
     * for a login, where the request has none yet; or `username` alone, as typed at a failed login).
     */
    audit(request: FastifyRequest, entry: AuditInput): Promise<void>;
    /** The second factor of password logins. */
    readonly secondFactor: SecondFactor;
    /** Single sign-on with the school's identity provider; undefined when OIDC_ISSUER is not set. */
    readonly singleSignOn: SingleSignOn | undefined;
  }
}

export type AuditInput = Omit<NewAuditEntry, 'userId' | 'username' | 'ip'> & {
  readonly user?: { readonly id: number; readonly username: string };
  readonly username?: string;
};

export interface SessionManager {
  readonly cookieName: string;
  /** Starts a new session for a user (a new token every time: no fixation) and sets the cookie. */
  start(
    request: FastifyRequest,
    reply: FastifyReply,
    userId: number,
    method: SessionMethod,
  ): Promise<{ idleExpiresAt: number; expiresAt: number }>;
  /** Ends the request's session, if any, and clears the cookie. */
  end(request: FastifyRequest, reply: FastifyReply): Promise<boolean>;
  /** The session a request carries, if it is valid now. */
  read(request: FastifyRequest): Promise<Staff | null>;
  /** A valid one-time set-up token, while no user exists (the first admin is made with it). */
  checkSetupToken(token: string): boolean;
  /** Forgets the set-up token once used. */
  closeSetup(): void;
  idleMs: number;
}

/** The access rule's refusals (the route-matrix test tells them from a route's own answers). */
export const NOT_LOGGED_IN = 'Log in to continue: your session has ended or you are not logged in.';
export const ROLE_REFUSED = 'Your role does not allow this. Ask an admin.';
export const SECOND_FACTOR_FIRST =
  'Set up a second factor first, on your Account page: a second factor is required for your role.';

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const RANK: Record<Access, number> = { public: 0, operator: 1, admin: 2 };
// A session's last use is written at most this often: idle expiry is exact to within it.
const TOUCH_EVERY_MS = 60_000;
const SETUP_TOKEN_MS = 3_600_000;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Staff sessions, route access rules, the Host and Origin checks (docs/security.md). Registered
 * at the root before any route, so its hooks see every route and every request.
 */
export const authPlugin = fp(
  async (app) => {
    const { config, store } = app;
    const https = config.PUBLIC_BASE_URL?.startsWith('https:') ?? false;
    // `__Host-` binds the cookie to this exact origin (Secure, Path=/, no Domain): browsers
    // accept it only over https.
    const cookieName = https ? '__Host-session' : 'session';
    const idleMs = config.SESSION_IDLE_TIMEOUT;
    const maxAgeMs = config.SESSION_MAX_AGE;
    const allowedHosts = hostAllowList(config);
    const mustHaveSecondFactor = (role: Role) => secondFactorRequiredFor(config.REQUIRE_TOTP, role);

    await app.register(cookie);
    app.decorateRequest('staff', null);

    // --- the route table: every route declares who may call it -------------------------------
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

    // --- sessions ------------------------------------------------------------------------------
    let setupToken: { hash: string; until: number } | undefined;

    const sessions: SessionManager = {
      cookieName,
      idleMs,
      async start(request, reply, userId, method) {
        // Whatever session the browser had ends: a new token every login (no fixation).
        await sessions.end(request, reply);
        const token = randomBytes(32).toString('base64url');
        const now = Date.now();
        const expiresAt = now + maxAgeMs;
        await store.sessions.create({
          id: sha256(token),
          user_id: userId,
          created_at: now,
          last_seen_at: now,
          expires_at: expiresAt,
          ip: request.ip,
          user_agent: request.headers['user-agent']?.slice(0, 512) ?? null,
          method,
        });
        await store.users.touchLogin(userId, now);
        reply.setCookie(cookieName, token, { path: '/', httpOnly: true, sameSite: 'strict', secure: https });
        return { idleExpiresAt: Math.min(now + idleMs, expiresAt), expiresAt };
      },
      async end(request, reply) {
        const token = request.cookies[cookieName];
        if (token === undefined) return false;
        await store.sessions.remove(sha256(token));
        reply.clearCookie(cookieName, { path: '/', httpOnly: true, sameSite: 'strict', secure: https });
        return true;
      },
      async read(request) {
        const token = request.cookies[cookieName];
        if (!token || token.length > 100) return null;
        const id = sha256(token);
        const row = await store.sessions.find(id);
        const now = Date.now();
        if (!row) return null;
        if (row.disabled || row.expires_at <= now || row.last_seen_at + idleMs <= now) {
          await store.sessions.remove(id);
          return null;
        }
        const mustSetUp = row.method === 'password' && !row.has_totp && mustHaveSecondFactor(row.role);
        if (now - row.last_seen_at >= TOUCH_EVERY_MS) {
          await store.sessions.touch(id, now);
          return toStaff(row, now, mustSetUp);
        }
        return toStaff(row, row.last_seen_at, mustSetUp);
      },
      checkSetupToken(token) {
        if (!setupToken || Date.now() > setupToken.until) return false;
        const a = Buffer.from(sha256(token), 'hex');
        const b = Buffer.from(setupToken.hash, 'hex');
        return timingSafeEqual(a, b);
      },
      closeSetup() {
        setupToken = undefined;
      },
    };
    app.decorate('sessions', sessions);
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
              redirectUri: `${config.PUBLIC_BASE_URL}/api/session/oidc/callback`,
            },
            app.sealer,
          )
        : undefined,
    );

    app.decorate('audit', async (request: FastifyRequest, { user, username, ...entry }: AuditInput) => {
      try {
        await store.audit.add({
          ...entry,
          userId: user?.id ?? request.staff?.userId ?? null,
          username: user?.username ?? username ?? request.staff?.username ?? null,
          ip: request.ip,
        });
      } catch (err) {
        request.log.error({ err, action: entry.action }, 'could not write the audit entry');
      }
    });

    // --- every request: Host, Origin, session, role ---------------------------------------------
    app.addHook('onRequest', async (request, reply) => {
      // Every rule below reads the route the router chose (its config), not the URL's text.
      const route = request.is404 ? undefined : request.routeOptions.config;
      if (allowedHosts && !route?.anyHost && !allowedHosts.has(hostName(request.host))) {
        request.log.warn({ host: request.host.slice(0, 200) }, 'Host not allowed (see ALLOWED_HOSTS)');
        return reply
          .code(421)
          .header('connection', 'close')
          .type('text/plain; charset=utf-8')
          .send('This server does not answer for that host name.');
      }
      // Paths no route matches get their 404 (or the console's page) without a session.
      const access = route ? (route.access ?? 'admin') : 'public';
      if (route?.consoleOnly && STATE_CHANGING.has(request.method)) {
        const refusal = crossSiteRefusal(request, config.PUBLIC_BASE_URL);
        if (refusal) return sendProblem(reply, problem(403, refusal));
      }
      if (access === 'public') {
        return;
      }
      const staff = await sessions.read(request);
      if (!staff) {
        return sendProblem(reply, problem(401, NOT_LOGGED_IN));
      }
      request.staff = staff;
      if (RANK[staff.role] < RANK[access]) {
        return sendProblem(reply, problem(403, ROLE_REFUSED));
      }
      if (staff.mustSetUpSecondFactor && !route?.secondFactorSetup) {
        return sendProblem(reply, problem(403, SECOND_FACTOR_FIRST, { secondFactorSetupRequired: true }));
      }
    });

    // --- the first admin ---------------------------------------------------------------------------
    // Once the database has been reached: at once, unless the server started without it.
    app.addHook('onReady', async () => {
      const setUp = store.whenReady(firstAdmin, (err) =>
        app.log.error({ err }, 'could not set up the first admin'),
      );
      // Reached already (the usual case): the admin exists before the server listens.
      if (store.readiness().migrations) await setUp;
    });
    async function firstAdmin(): Promise<void> {
      if ((await store.users.count()) > 0) return;
      if (config.LOCAL_LOGIN === 'off') {
        app.log.info(
          'No staff user exists yet: admins are made at their first single sign-on (OIDC_ADMIN_GROUPS).',
        );
        return;
      }
      if (config.ADMIN_USERNAME && config.ADMIN_PASSWORD) {
        const created = await store.users.createFirst({
          username: config.ADMIN_USERNAME,
          display_name: config.ADMIN_USERNAME,
          role: 'admin',
          password_hash: await hashPassword(config.ADMIN_PASSWORD),
        });
        if (created) app.log.info({ username: created.username }, 'first admin created from ADMIN_USERNAME');
        return;
      }
      const token = randomBytes(24).toString('base64url');
      setupToken = { hash: sha256(token), until: Date.now() + SETUP_TOKEN_MS };
      const base =
        config.PUBLIC_BASE_URL ??
        `http://${config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST}:${config.PORT}`;
      app.log.warn(
        { setupUrl: `${base}/setup?token=${token}` },
        'No staff user exists yet. Open the set-up URL within an hour to create the first admin (or set ADMIN_USERNAME and ADMIN_PASSWORD); restart for a new one.',
      );
    }

    // Ended sessions are removed now and then (a session is checked on every use anyway).
    const sweep = setInterval(() => {
      const now = Date.now();
      store.sessions.removeExpired(now, now - idleMs).catch((err) => {
        if (!isUnavailableError(err)) app.log.error({ err }, 'session sweep failed');
      });
    }, 3_600_000);
    sweep.unref();
    app.addHook('onClose', async () => clearInterval(sweep));
  },
  { name: 'auth', dependencies: ['config', 'store', 'secrets'] },
);

/**
 * Registers `routes` in a scope whose routes get `access` unless they declare their own: each
 * group of routes gets its rule where it is registered (app.ts, api/plugin.ts).
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

function toStaff(row: SessionWithUser, lastSeenAt: number, mustSetUpSecondFactor: boolean): Staff {
  return {
    sessionId: row.id,
    userId: row.user_id,
    username: row.username,
    displayName: row.display_name,
    role: row.role,
    createdAt: row.created_at,
    lastSeenAt,
    expiresAt: row.expires_at,
    method: row.method,
    hasSecondFactor: row.has_totp === 1,
    mustSetUpSecondFactor,
  };
}

/** Host names the server answers for; undefined: any (`ALLOWED_HOSTS=*`). */
function hostAllowList(config: {
  ALLOWED_HOSTS?: string[] | undefined;
  PUBLIC_BASE_URL?: string | undefined;
  HOST: string;
}): Set<string> | undefined {
  if (config.ALLOWED_HOSTS?.includes('*')) return undefined;
  const hosts = new Set(config.ALLOWED_HOSTS?.map(hostName) ?? []);
  if (!config.ALLOWED_HOSTS) {
    for (const h of ['localhost', '127.0.0.1', '[::1]']) hosts.add(h);
    if (config.PUBLIC_BASE_URL) hosts.add(new URL(config.PUBLIC_BASE_URL).hostname.toLowerCase());
    if (!['0.0.0.0', '::', ''].includes(config.HOST))
      hosts.add(
        hostName(
          config.HOST.includes(':') && !config.HOST.startsWith('[') ? `[${config.HOST}]` : config.HOST,
        ),
      );
  }
  return hosts;
}

/** `Host: Example.org:3000` → `example.org`; `[::1]:3000` → `[::1]`. */
function hostName(host: string): string {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.indexOf(':');
  return (colon === -1 ? lower : lower.slice(0, colon)).replace(/\.$/, '');
}

/**
 * Why a state-changing API request is refused as cross-site, or undefined when it is not: its
 * Origin (or, without one, its Referer) must be this server's own origin, and it must carry a
 * JSON body or the console's custom header, so that no plain HTML form or simple request from
 * another site can act with a staff user's cookie.
 */
function crossSiteRefusal(request: FastifyRequest, publicBaseUrl: string | undefined): string | undefined {
  const own = originOf(publicBaseUrl ?? `${request.protocol}://${request.host}`);
  const origin = header(request, 'origin');
  let from: string | undefined;
  if (origin !== undefined && origin !== 'null') from = originOf(origin);
  else {
    const referer = header(request, 'referer');
    if (referer) from = originOf(referer);
  }
  if (from === undefined) return 'This request must come from the console (it has no Origin).';
  if (from !== own) return 'This request must come from the console (its Origin is another site).';
  const type = (header(request, 'content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json' && header(request, CSRF_HEADER) === undefined) {
    return `This request must carry a JSON body or the ${CSRF_HEADER} header.`;
  }
  return undefined;
}

/** `http://Example.org:80/x` → `http://example.org`; undefined when not a URL. */
function originOf(url: string): string | undefined {
  return URL.canParse(url) ? new URL(url).origin : undefined;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
