import type { Sealer } from '../secrets/sealer.js';
import type { Store, UserRow } from '../store/index.js';
import {
  isRecoveryCode,
  matchTotp,
  newRecoveryCodes,
  newTotpSecret,
  otpauthUrl,
  recoveryCodeHash,
} from './totp.js';

/**
 * The second factor of password logins (docs/security.md#second-factor): setting one up, and
 * checking the code given at a login. Secrets are stored sealed for their user (a sealed secret
 * copied onto another user's row does not open there); recovery codes as their hashes.
 */
export interface SecondFactor {
  /** A new secret waiting to be proved by a code from the app (it replaces one waiting before). */
  begin(user: Pick<UserRow, 'id' | 'username'>): Promise<{ secret: string; otpauthUrl: string }>;
  /**
   * The waiting secret becomes the user's second factor when `code` is from it: the ten recovery
   * codes, to be shown once. `nothing-pending`: set-up was not started (or was finished elsewhere).
   */
  activate(
    userId: number,
    code: string,
  ): Promise<{ recoveryCodes: string[] } | 'wrong-code' | 'nothing-pending'>;
  /** Whether `code` opens `user`'s login: the app's current code (once) or an unused recovery code. */
  check(user: UserRow, code: string): Promise<SecondFactorCheck>;
}

export type SecondFactorCheck =
  | { readonly ok: true; readonly by: 'app' | 'recovery code'; readonly recoveryCodesLeft?: number }
  | { readonly ok: false; readonly reason: 'wrong code' | 'code already used' | 'recovery code not valid' };

export function createSecondFactor(options: {
  readonly store: Pick<Store, 'users'>;
  readonly sealer: Sealer;
  /** The name the authenticator app lists the account under (`School console (sms.example.org)`). */
  readonly issuer: string;
  readonly now?: () => number;
}): SecondFactor {
  const { store, sealer, issuer } = options;
  const now = options.now ?? Date.now;
  const context = (userId: number) => `totp:${userId}`;
  return {
    async begin(user) {
      const secret = newTotpSecret();
      await store.users.setTotpPending(user.id, sealer.seal(secret, context(user.id)));
      return { secret, otpauthUrl: otpauthUrl({ issuer, account: user.username, secret }) };
    },
    async activate(userId, code) {
      const user = await store.users.findById(userId);
      if (!user?.totp_pending) return 'nothing-pending';
      const step = matchTotp(sealer.open(user.totp_pending, context(userId)), code, now());
      if (step === undefined) return 'wrong-code';
      const recoveryCodes = newRecoveryCodes();
      const activated = await store.users.activateTotp(
        userId,
        user.totp_pending,
        step,
        recoveryCodes.map(recoveryCodeHash),
      );
      return activated ? { recoveryCodes } : 'nothing-pending';
    },
    async check(user, code) {
      if (!user.totp_secret) return { ok: true, by: 'app' };
      if (isRecoveryCode(code)) {
        if (!(await store.users.takeRecoveryCode(user.id, recoveryCodeHash(code)))) {
          return { ok: false, reason: 'recovery code not valid' };
        }
        const after = await store.users.findById(user.id);
        const left = after?.recovery_codes ? (JSON.parse(after.recovery_codes) as string[]).length : 0;
        return { ok: true, by: 'recovery code', recoveryCodesLeft: left };
      }
      const step = matchTotp(sealer.open(user.totp_secret, context(user.id)), code, now());
      if (step === undefined) return { ok: false, reason: 'wrong code' };
      // Taken once: the same code (or an older one) again is a replay.
      if (!(await store.users.takeTotpStep(user.id, step))) return { ok: false, reason: 'code already used' };
      return { ok: true, by: 'app' };
    },
  };
}
