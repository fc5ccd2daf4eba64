import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hkdfSync,
  randomBytes,
  randomFillSync,
} from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Sealing secrets the server must keep for a while but must not keep readable (auth codes waiting
 * to be sent): AES-256-GCM under a key that is not in the database (docs/security.md#sealed-codes).
 * A sealed value is bound to its context (a delivery's idempotency key), so a sealed value copied
 * onto another row does not open there.
 */
export interface Sealer {
  /** `plaintext` sealed for `context`: `v1.` then base64url of IV, tag and ciphertext. */
  seal(plaintext: string, context: string): string;
  /** The plaintext of a value sealed for `context`; throws SealedValueError if it does not open. */
  open(sealed: string, context: string): string;
  /**
   * A keyed hash of `text` (HMAC-SHA-256, hex) under a key derived from the sealing key for
   * `purpose` (HKDF-SHA-256): the same text gives the same hash under the same key, and without
   * the key the hash tells nothing, not even by trying every phone number. For recording that
   * something was done to a value without keeping the value (a phone number's erasure).
   */
  keyedHash(text: string, purpose: string): string;
}

/** A sealed value that does not open: another key, another context, or altered. */
export class SealedValueError extends Error {
  override name = 'SealedValueError';
}

const VERSION = 'v1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** The key file created in DATA_DIR when CODE_ENCRYPTION_KEY is not set. */
export const KEY_FILE = 'code-encryption.key';

/** A key as configured: 32 bytes in base64 (or base64url) or hex; undefined when it is not one. */
export function secretKeyBytes(text: string): Buffer | undefined {
  const value = text.trim();
  let bytes: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(value)) bytes = Buffer.from(value, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(value)) bytes = Buffer.from(value, 'base64');
  return bytes?.length === 32 ? bytes : undefined;
}

/** IVs are cut from random bytes drawn this many at a time (a draw per seal was half its cost). */
const IVS_PER_DRAW = 256;

export function createSealer(key: Buffer): Sealer {
  if (key.length !== 32) throw new Error('A sealing key is 32 bytes.');
  const ivs = Buffer.alloc(IV_BYTES * IVS_PER_DRAW);
  let next = ivs.length;
  /** A fresh random IV: each is used once, so no two seals under this key share one. */
  const freshIv = (): Buffer => {
    if (next >= ivs.length) {
      randomFillSync(ivs);
      next = 0;
    }
    const iv = Buffer.from(ivs.subarray(next, next + IV_BYTES));
    next += IV_BYTES;
    return iv;
  };
  const hashKeys = new Map<string, Buffer>();
  return {
    keyedHash(text, purpose) {
      let hashKey = hashKeys.get(purpose);
      if (!hashKey) {
        hashKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `keyed-hash:${purpose}`, 32));
        hashKeys.set(purpose, hashKey);
      }
      return createHmac('sha256', hashKey).update(text, 'utf8').digest('hex');
    },
    seal(plaintext, context) {
      const iv = freshIv();
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      // GCM is a stream mode: update() gives every byte and final() none, but for the tag.
      const body = cipher.update(plaintext, 'utf8');
      cipher.final();
      return VERSION + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
    },
    open(sealed, context) {
      if (!sealed.startsWith(VERSION)) throw new SealedValueError('Not a sealed value.');
      const raw = Buffer.from(sealed.slice(VERSION.length), 'base64url');
      if (raw.length < IV_BYTES + TAG_BYTES) throw new SealedValueError('A sealed value is too short.');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
        return Buffer.concat([
          decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch {
        throw new SealedValueError(
          'A sealed auth code did not open: it was sealed with another key (CODE_ENCRYPTION_KEY) or altered.',
        );
      }
    },
  };
}

/**
 * The sealer of auth codes: CODE_ENCRYPTION_KEY when set, else the key file in DATA_DIR, created
 * at first start (32 random bytes, base64, mode 0600). The file is never in the database, and a
 * backup of the database alone does not hold it.
 */
export function loadSealer(options: { readonly key?: string | undefined; readonly dataDir: string }): Sealer {
  if (options.key !== undefined) {
    const bytes = secretKeyBytes(options.key);
    if (!bytes) throw new Error('CODE_ENCRYPTION_KEY must be 32 bytes in base64 or hex.');
    return createSealer(bytes);
  }
  fs.mkdirSync(options.dataDir, { recursive: true });
  const file = path.join(options.dataDir, KEY_FILE);
  try {
    // `wx`: created only if absent, so two starts at once cannot each write a key.
    fs.writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const bytes = secretKeyBytes(fs.readFileSync(file, 'utf8'));
  if (!bytes) throw new Error(`${file} does not hold a 32-byte key in base64 or hex.`);
  return createSealer(bytes);
}
