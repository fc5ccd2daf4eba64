import type { FastifyReply, FastifyRequest } from 'fastify';
import { createLimiter } from '../limits/limiter.js';
import type { RateLimit } from '../limits/window.js';
import type { Store, UserRow } from '../store/index.js';
import type { AuditInput } from './audit.js';
import { decoyHash, verifyPassword } from './password.js';
import type { SecondFactor } from './second-factor.js';
import type { SessionManager } from './sessions.js';
import type { TrustedBrowsers } from './trusted-browser.js';

/** What a password login typed: the username in any case, and the second factor's code if asked. */
export interface LoginInput {
  readonly username: string;
  readonly password: string;
  readonly code?: string | undefined;
}

/**
 * How a login attempt ended. An unknown user, a wrong password and a disabled account are one
 * outcome, so that no caller can tell them apart by mistake; the audit log has the reason.
 */
export type LoginResult =
  | {
      readonly outcome: 'logged-in';
      readonly user: UserRow;
      readonly times: { readonly idleExpiresAt: number; readonly expiresAt: number };
    }
  /** LOCAL_LOGIN=off: only single sign-on logs in. */
  | { readonly outcome: 'password-logins-off' }
  /** The username or the address has had too many failed logins lately. */
  | { readonly outcome: 'too-many-failures'; readonly retryAfterMs: number }
  | { readonly outcome: 'wrong-username-or-password' }
  /** The password is right and the user has a second factor: ask for its code. */
  | { readonly outcome: 'code-needed' }
  /** The code was wrong, already used, or a recovery code that is not valid. */
  | { readonly outcome: 'wrong-code' };

export interface Login {
  /**
   * Checks a password login and, when it succeeds, starts the session (its cookie is set on
   * `reply`). Every outcome but `code-needed` is audited.
   */
  attempt(request: FastifyRequest, reply: FastifyReply, input: LoginInput): Promise<LoginResult>;
}

/** A username from one address (an address has no space; PostgreSQL's text has no NUL). */
const pairKey = (username: string, ip: string) => `${ip} ${username}`;

/** Which limit refused a login, in the audit log. */
type RefusedBy = 'username from this address' | 'address' | 'username' | 'browser';

/**
 * The rules of a password login (docs/security.md#failed-logins). Failed logins are limited so
 * that guessing stays as slow as a closed username would make it, without letting strangers close
 * a username to its owner:
 *
 * - per username from one address (`LOGIN_LIMIT_PER_USER`): that address is closed to that
 *   username, whoever tries, until its failures leave the window;
 * - per address (`LOGIN_LIMIT_PER_IP`): that address is closed to every username;
 * - per username from everywhere (`LOGIN_LIMIT_PER_USER` again): past it the username is slowed,
 *   not closed — one more attempt per window, from an address that has not used up its own
 *   failures for it;
 * - a browser the user has logged in from with their password (trusted-browser.ts) is closed by
 *   none of the others' failures (the username's from its own address included), only by its own
 *   (`LOGIN_LIMIT_PER_USER`).
 *
 * A slot is taken before the password is checked, so a burst of guesses sent at once cannot
 * exceed a limit.
 */
export function createLogin(options: {
  readonly store: Pick<Store, 'dialect' | 'limits' | 'users'>;
  readonly config: {
    readonly LOCAL_LOGIN: 'on' | 'off';
    /** Failed logins per username and per address; null: no limit. */
    readonly LOGIN_LIMIT_PER_USER: RateLimit | null;
    readonly LOGIN_LIMIT_PER_IP: RateLimit | null;
  };
  readonly sessions: Pick<SessionManager, 'start'>;
  readonly secondFactor: Pick<SecondFactor, 'check'>;
  readonly browsers: TrustedBrowsers;
  readonly audit: (request: FastifyRequest, entry: AuditInput) => Promise<void>;
}): Login {
  const { store, config, sessions, secondFactor, browsers, audit } = options;
  // Shared by every instance on PostgreSQL, so N instances do not allow N times the guesses.
  const limiter = createLimiter(store);
  const perUser = config.LOGIN_LIMIT_PER_USER;
  const perIp = config.LOGIN_LIMIT_PER_IP;
  /** Past the username's limit: one attempt per window. */
  const slowed = perUser ? { max: 1, windowMs: perUser.windowMs } : null;
  const spec = (dimension: string, key: string, limit: RateLimit | null, by: RefusedBy) =>
    limit ? [{ spec: { dimension, key, limit }, by }] : [];

  /** Takes a slot under every limit that applies to this attempt, or says which one refused. */
  async function take(
    username: string,
    ip: string,
    browser: string | undefined,
  ): Promise<
    | { readonly ok: true; release(): Promise<void> }
    | { readonly ok: false; readonly retryAfterMs: number; readonly by: RefusedBy }
  > {
    const pair = spec('login-pair', pairKey(username, ip), perUser, 'username from this address');
    // A known browser is held to its own failures alone: on a school's network every member of
    // staff shares one address, and a stranger there must not close the username to its owner.
    const rounds = browser
      ? [spec('login-browser', browser, perUser, 'browser')]
      : [
          [
            ...pair,
            ...spec('login-ip', ip, perIp, 'address'),
            ...spec('login-user', username, perUser, 'username'),
          ],
          [
            ...pair,
            ...spec('login-ip', ip, perIp, 'address'),
            ...spec('login-user-slowed', username, slowed, 'username'),
          ],
        ];
    let refusal: { ok: false; retryAfterMs: number; by: RefusedBy } | undefined;
    for (const round of rounds) {
      const slot = await limiter.take(round.map((r) => r.spec));
      if (slot.ok) return slot;
      const by = round[slot.refused]?.by ?? 'username';
      refusal = { ok: false, retryAfterMs: slot.retryAfterMs, by };
      // Only a username past its limit is tried again, slowed.
      if (by !== 'username') break;
    }
    return refusal ?? { ok: false, retryAfterMs: 1000, by: 'username' };
  }

  return {
    async attempt(request, reply, input) {
      const username = input.username.toLowerCase();
      if (config.LOCAL_LOGIN === 'off') {
        await audit(request, {
          action: 'login-failed',
          username,
          details: { reason: 'password logins are off' },
        });
        return { outcome: 'password-logins-off' };
      }
      const user = await store.users.findByUsername(username);
      const browser = user ? browsers.of(request, user.id) : undefined;
      const slot = await take(username, request.ip, browser);
      if (!slot.ok) {
        await audit(request, {
          action: 'login-failed',
          ...(user ? { user } : { username }),
          details: { reason: 'too many failed logins', limit: slot.by },
        });
        return { outcome: 'too-many-failures', retryAfterMs: slot.retryAfterMs };
      }
      // An unknown user costs the same time as a wrong password.
      const ok = await verifyPassword(input.password, user?.password_hash ?? (await decoyHash()));
      if (!user || !ok || user.disabled) {
        await audit(request, {
          action: 'login-failed',
          ...(user ? { user } : { username }),
          details: { reason: !user ? 'unknown user' : !ok ? 'wrong password' : 'account disabled' },
        });
        return { outcome: 'wrong-username-or-password' };
      }
      let secondFactorDetails: Record<string, unknown> = {};
      if (user.totp_secret) {
        if (!input.code) {
          // Not a failure: the console asks for the code next. The slot is handed back.
          await slot.release();
          return { outcome: 'code-needed' };
        }
        // A wrong code keeps its slot: codes are guessed under the same limits as passwords.
        const check = await secondFactor.check(user, input.code);
        if (!check.ok) {
          await audit(request, { action: 'login-failed', user, details: { reason: check.reason } });
          return { outcome: 'wrong-code' };
        }
        secondFactorDetails = {
          secondFactor: check.by,
          ...(check.recoveryCodesLeft === undefined ? {} : { recoveryCodesLeft: check.recoveryCodesLeft }),
        };
      }
      // A success frees the slots it took and forgets this username's failures, and the browser
      // is known from now on.
      await slot.release();
      await Promise.all([
        limiter.forget('login-user', username),
        limiter.forget('login-user-slowed', username),
        limiter.forget('login-pair', pairKey(username, request.ip)),
        ...(browser ? [limiter.forget('login-browser', browser)] : []),
      ]);
      const times = await sessions.start(request, reply, user.id, 'password');
      browsers.remember(request, reply, user.id);
      await audit(request, {
        action: 'login',
        user,
        ...(user.totp_secret ? { details: secondFactorDetails } : {}),
      });
      return { outcome: 'logged-in', user, times };
    },
  };
}
