import type { FastifyReply, FastifyRequest } from 'fastify';
import { createLimiter, type LimitSpec } from '../limits/limiter.js';
import type { RateLimit } from '../limits/window.js';
import type { Store, UserRow } from '../store/index.js';
import type { AuditInput } from './audit.js';
import { decoyHash, verifyPassword } from './password.js';
import type { SecondFactor } from './second-factor.js';
import type { SessionManager } from './sessions.js';

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

/**
 * The rules of a password login (docs/security.md#staff-accounts-and-sessions). Failed logins are
 * limited per username and per address; a slot is taken before the password is checked, so a
 * burst of guesses sent at once cannot exceed the limit.
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
  readonly audit: (request: FastifyRequest, entry: AuditInput) => Promise<void>;
}): Login {
  const { store, config, sessions, secondFactor, audit } = options;
  // Shared by every instance on PostgreSQL, so N instances do not allow N times the guesses.
  const limiter = createLimiter(store);
  const limits = (username: string, ip: string): LimitSpec[] => [
    ...(config.LOGIN_LIMIT_PER_USER
      ? [{ dimension: 'login-user', key: username, limit: config.LOGIN_LIMIT_PER_USER }]
      : []),
    ...(config.LOGIN_LIMIT_PER_IP
      ? [{ dimension: 'login-ip', key: ip, limit: config.LOGIN_LIMIT_PER_IP }]
      : []),
  ];

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
      const slot = await limiter.take(limits(username, request.ip));
      if (!slot.ok) {
        await audit(request, {
          action: 'login-failed',
          username,
          details: { reason: 'too many failed logins' },
        });
        return { outcome: 'too-many-failures', retryAfterMs: slot.retryAfterMs };
      }
      const user = await store.users.findByUsername(username);
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
      // A success frees the slots it took and forgets this username's failures.
      await slot.release();
      await limiter.forget('login-user', username);
      const times = await sessions.start(request, reply, user.id, 'password');
      await audit(request, {
        action: 'login',
        user,
        ...(user.totp_secret ? { details: secondFactorDetails } : {}),
      });
      return { outcome: 'logged-in', user, times };
    },
  };
}
