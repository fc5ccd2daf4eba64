import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password hashes with scrypt (node:crypto, run on libuv's thread pool so the event loop stays
 * free). The cost is stored with each hash, so it can be raised later without breaking old ones:
 * `scrypt$N$r$p$salt$hash`, salt and hash in base64url.
 *
 * N = 2^15, r = 8, p = 1 costs 32 MiB (128 × N × r bytes) per hash, and time on a pool thread:
 * OWASP's minimum for scrypt is N = 2^17 at p = 1 *or* equivalent work; we keep 2^15 so that a
 * burst of logins cannot take the server's memory (each hash holds 32 MiB while it runs), and
 * rely on the login limits for online guessing.
 */
const COST = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...cost, maxmem: 128 * cost.N * cost.r + 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, COST);
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/**
 * Whether `password` matches `stored`; false for a hash this code cannot read — a single sign-on
 * user's `!` among them — after checking the decoy, so that such a user cannot be told from a
 * password user by how long a wrong password takes.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  const cost = { N: Number(n), r: Number(r), p: Number(p) };
  const readable =
    scheme === 'scrypt' &&
    n &&
    r &&
    p &&
    salt &&
    hash &&
    Number.isInteger(cost.N) &&
    cost.N <= 2 ** 20 &&
    cost.r <= 32 &&
    cost.p <= 16;
  if (!readable) {
    if (stored !== (await decoyHash())) await verifyPassword(password, await decoyHash());
    return false;
  }
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), cost);
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * A hash of a random password, checked when the username is unknown so that an unknown user
 * and a wrong password take the same time.
 */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  return decoy;
}
