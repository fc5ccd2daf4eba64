import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Sealer } from '../secrets/sealer.js';

/**
 * A browser a user has logged in from with their password: after a successful password login the
 * browser keeps a cookie naming that user, sealed under the server's key (AES-GCM,
 * secrets/sealer.ts), so it can be neither forged nor moved to another user. Failed logins by
 * strangers do not close a username to a browser that holds its cookie
 * (docs/security.md#failed-logins): the "device cookie" of OWASP's advice on slowing guessing down
 * without letting strangers lock users out.
 *
 * The cookie names no secret and grants nothing by itself: the password (and second factor) are
 * asked as always. Each browser has its own limit on failures.
 */
export interface TrustedBrowsers {
  /** The browser's id when its cookie was given to `userId`, else undefined. */
  of(request: FastifyRequest, userId: number): string | undefined;
  /** Gives the browser a cookie for `userId` (after a successful login), keeping its id if it has one. */
  remember(request: FastifyRequest, reply: FastifyReply, userId: number): void;
}

/** How long a browser stays known without a new password login from it. */
const LIFETIME_S = 90 * 24 * 60 * 60;
/** What a sealed value is bound to, so that no other sealed value opens as a browser's cookie. */
const CONTEXT = 'trusted-browser';

export function createTrustedBrowsers(options: {
  readonly sealer: Sealer;
  readonly https: boolean;
}): TrustedBrowsers {
  const { sealer, https } = options;
  // `__Host-`: this exact origin only, Secure, Path=/ (as the session's cookie).
  const cookieName = https ? '__Host-browser' : 'browser';

  /** The cookie's content: {user id, browser id}, or undefined when there is none or it does not open. */
  function read(request: FastifyRequest): { u: number; b: string } | undefined {
    const sealed = request.cookies[cookieName];
    if (!sealed || sealed.length > 512) return undefined;
    try {
      const value = JSON.parse(sealer.open(sealed, CONTEXT)) as { u?: unknown; b?: unknown };
      return typeof value.u === 'number' && typeof value.b === 'string'
        ? { u: value.u, b: value.b }
        : undefined;
    } catch {
      return undefined;
    }
  }

  return {
    of(request, userId) {
      const value = read(request);
      return value?.u === userId ? value.b : undefined;
    },
    remember(request, reply, userId) {
      const b = read(request)?.b ?? randomBytes(12).toString('base64url');
      reply.setCookie(cookieName, sealer.seal(JSON.stringify({ u: userId, b }), CONTEXT), {
        path: '/',
        httpOnly: true,
        sameSite: 'strict',
        secure: https,
        maxAge: LIFETIME_S,
      });
    },
  };
}
