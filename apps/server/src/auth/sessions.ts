import { createHash, randomBytes } from 'node:crypto';
import type { Role } from '@school/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  isUnavailableError,
  type SessionMethod,
  type SessionWithUser,
  type Store,
  schoolIdsOf,
  schoolIdsText,
} from '../store/index.js';

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
  /**
   * The schools the user is limited to (their ids, never empty), or null: organisation-wide, every
   * school. Read with the session at every request, so a change holds from the user's next one.
   */
  readonly schoolIds: readonly number[] | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The logged-in staff user, on routes that need one; null on public routes without a session. */
    staff: Staff | null;
  }
  interface FastifyInstance {
    /** Sessions: start one (login), end one, read the one a request carries. */
    readonly sessions: SessionManager;
  }
}

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
  /**
   * Whether the request's session is still valid, without counting this as a use (a live feed
   * left open is not someone at work): for long-lived responses to re-check (session-watch.ts).
   * A session whose user's schools changed since the request began does not last for it: what
   * was read with the old schools ends, and the console asks again with the new ones.
   */
  lasts(request: FastifyRequest): Promise<boolean>;
  idleMs: number;
}

// A session's last use is written at most this often: idle expiry is exact to within it.
const TOUCH_EVERY_MS = 60_000;
const SWEEP_EVERY_MS = 3_600_000;

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Staff sessions in the store, named by the SHA-256 of a random token the browser keeps in an
 * HttpOnly, SameSite=Strict cookie (docs/security.md#staff-accounts-and-sessions).
 */
export function createSessionManager(options: {
  readonly store: Store;
  /** PUBLIC_BASE_URL is https: the cookie is `__Host-` and Secure. */
  readonly https: boolean;
  readonly idleMs: number;
  readonly maxAgeMs: number;
  /** Whether REQUIRE_TOTP asks a second factor of a role. */
  readonly mustHaveSecondFactor: (role: Role) => boolean;
  /**
   * LOCAL_LOGIN=off: only single sign-on logs in, and a password session opened before it was
   * turned off ends at its next use, on every instance, rather than working on.
   */
  readonly passwordSessions: boolean;
}): SessionManager {
  const { store, https, idleMs, maxAgeMs, mustHaveSecondFactor, passwordSessions } = options;
  /** A session that has ended by time, by its user being disabled, or by LOCAL_LOGIN=off. */
  const ended = (row: SessionWithUser, now: number): boolean =>
    Boolean(row.disabled) ||
    row.expires_at <= now ||
    row.last_seen_at + idleMs <= now ||
    (!passwordSessions && row.method === 'password');
  // `__Host-` binds the cookie to this exact origin (Secure, Path=/, no Domain): browsers
  // accept it only over https.
  const cookieName = https ? '__Host-session' : 'session';
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
    async lasts(request) {
      const token = request.cookies[cookieName];
      if (!token || token.length > 100) return false;
      const row = await store.sessions.find(sha256(token));
      if (row === undefined || ended(row, Date.now())) return false;
      const before = request.staff?.schoolIds;
      return before === undefined || schoolIdsText(before) === schoolIdsText(schoolIdsOf(row.school_ids));
    },
    async read(request) {
      const token = request.cookies[cookieName];
      if (!token || token.length > 100) return null;
      const id = sha256(token);
      const row = await store.sessions.find(id);
      const now = Date.now();
      if (!row) return null;
      if (ended(row, now)) {
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
  };
  return sessions;
}

/** Removes ended sessions now and then (a session is checked on every use anyway). */
export function sweepEndedSessions(app: FastifyInstance, idleMs: number): void {
  const sweep = setInterval(() => {
    const now = Date.now();
    app.store.sessions.removeExpired(now, now - idleMs).catch((err) => {
      if (!isUnavailableError(err)) app.log.error({ err }, 'session sweep failed');
    });
  }, SWEEP_EVERY_MS);
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));
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
    schoolIds: schoolIdsOf(row.school_ids),
  };
}
