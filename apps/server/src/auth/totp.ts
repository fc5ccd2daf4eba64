import { createHash } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';

/**
 * Time-based one-time passwords (RFC 6238): HMAC-SHA1, 6 digits, 30 s steps — what every
 * authenticator app reads from an `otpauth://` URL — computed by `otpauth`; and the recovery
 * codes that stand in for the app once each (docs/security.md#second-factor). What is ours: the
 * step a code matched (the caller refuses a step taken before: replay), the codes' shape, and
 * how recovery codes are stored.
 */

export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_S = 30;
/** Steps either side of now a code is still taken from: a clock a little off, a code typed slowly. */
export const TOTP_WINDOW = 1;
export const RECOVERY_CODES = 10;

const PARAMETERS = { algorithm: 'SHA1', digits: TOTP_DIGITS, period: TOTP_PERIOD_S } as const;

/** A new secret: 20 random bytes (160 bits, RFC 4226's recommendation), in base32 without padding. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The time step of `now` (epoch ms). */
export const totpStep = (now: number): number => TOTP.counter({ period: TOTP_PERIOD_S, timestamp: now });

/**
 * The step whose code `code` is (spaces ignored), within TOTP_WINDOW steps of `now`, or
 * undefined. Compared in constant time; a caller refuses a step it has already accepted (replay).
 */
export function matchTotp(secret: string, code: string, now: number): number | undefined {
  const typed = code.replace(/\s/g, '');
  if (!/^\d{6}$/.test(typed)) return undefined;
  let key: Secret;
  try {
    key = Secret.fromBase32(secret);
  } catch {
    return undefined; // Not base32: no code matches it.
  }
  const delta = TOTP.validate({
    token: typed,
    secret: key,
    ...PARAMETERS,
    timestamp: now,
    window: TOTP_WINDOW,
  });
  return delta === null ? undefined : totpStep(now) + delta;
}

/** The `otpauth://` URL an authenticator app reads (from a QR code or typed in). */
export function otpauthUrl(options: { issuer: string; account: string; secret: string }): string {
  return new TOTP({
    issuer: options.issuer,
    label: options.account,
    secret: options.secret,
    ...PARAMETERS,
  }).toString();
}

/** Ten new single-use recovery codes, `xxxxx-xxxxx` in lower-case base32 (50 random bits each). */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODES }, () => {
    const code = new Secret({ size: 7 }).base32.slice(0, 10).toLowerCase();
    return `${code.slice(0, 5)}-${code.slice(5)}`;
  });
}

/**
 * What is stored of a recovery code: its SHA-256 (the codes are random, 50 bits: a slow hash
 * would add nothing; guessing one online meets the login limits).
 */
export function recoveryCodeHash(code: string): string {
  const normal = code.trim().toLowerCase().replace(/[\s-]/g, '');
  return createHash('sha256').update(normal).digest('hex');
}

/** Whether `code` looks like a recovery code rather than an app's 6 digits. */
export const isRecoveryCode = (code: string): boolean => /^[a-z2-7]{5}-?[a-z2-7]{5}$/i.test(code.trim());
