import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Time-based one-time passwords (RFC 6238, over RFC 4226's HOTP): HMAC-SHA1, 6 digits, 30 s
 * steps — what every authenticator app reads from an `otpauth://` URL — and the recovery codes
 * that stand in for the app once each (docs/security.md#second-factor).
 */

export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_S = 30;
/** Steps either side of now a code is still taken from: a clock a little off, a code typed slowly. */
export const TOTP_WINDOW = 1;
export const RECOVERY_CODES = 10;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32, without padding (as otpauth URLs carry it). */
export function base32Encode(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** Reads base32, ignoring case, spaces and padding; undefined when it is not base32. */
export function base32Decode(text: string): Buffer | undefined {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const char of clean) {
    const index = BASE32.indexOf(char);
    if (index === -1) return undefined;
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A new secret: 20 random bytes (160 bits, RFC 4226's recommendation), in base32. */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(20));
}

/** HOTP (RFC 4226): the `digits`-digit code of `counter` under `key`. */
export function hotp(key: Uint8Array, counter: number, digits = TOTP_DIGITS): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(message).digest();
  const offset = (mac[mac.length - 1] as number) & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

/** The time step of `now` (epoch ms). */
export const totpStep = (now: number): number => Math.floor(now / 1000 / TOTP_PERIOD_S);

/**
 * The step whose code `code` is, within TOTP_WINDOW steps of `now`, or undefined. Compared in
 * constant time; a caller refuses a step it has already accepted (replay).
 */
export function matchTotp(secret: string, code: string, now: number): number | undefined {
  const key = base32Decode(secret);
  const typed = code.replace(/\s/g, '');
  if (!key || !/^\d{6}$/.test(typed)) return undefined;
  const current = totpStep(now);
  let found: number | undefined;
  // Every step of the window is computed, whichever matches: the time taken does not tell which.
  for (let step = current - TOTP_WINDOW; step <= current + TOTP_WINDOW; step++) {
    if (timingSafeEqual(Buffer.from(hotp(key, step)), Buffer.from(typed))) found ??= step;
  }
  return found;
}

/** The `otpauth://` URL an authenticator app reads (from a QR code or typed in). */
export function otpauthUrl(options: { issuer: string; account: string; secret: string }): string {
  const label = `${encodeURIComponent(options.issuer)}:${encodeURIComponent(options.account)}`;
  const query = new URLSearchParams({
    secret: options.secret,
    issuer: options.issuer,
    algorithm: 'SHA1',
    digits: String(TOTP_DIGITS),
    period: String(TOTP_PERIOD_S),
  });
  return `otpauth://totp/${label}?${query}`;
}

/** Ten new single-use recovery codes, `xxxxx-xxxxx` in lower-case base32 (50 random bits each). */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODES }, () => {
    const code = base32Encode(randomBytes(7)).slice(0, 10).toLowerCase();
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
