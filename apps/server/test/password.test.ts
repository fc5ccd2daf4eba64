/**
 * A wrong password costs the same whatever the account: a single sign-on user's stored hash is
 * `!` (no password), and answering it at once (~4 ms against ~130 ms) told such usernames apart.
 * Compared within one run, medians of alternating checks, with a wide margin: a shortcut is 30×.
 */
import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../src/auth/password.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function took(check: () => Promise<boolean>): Promise<number> {
  const start = performance.now();
  expect(await check()).toBe(false);
  return performance.now() - start;
}

describe('verifyPassword', () => {
  it('takes as long for an account with no password (single sign-on) as for a wrong one', async () => {
    const stored = await hashPassword('the right password');
    const sso: number[] = [];
    const wrong: number[] = [];
    for (let i = 0; i < 5; i++) {
      sso.push(await took(() => verifyPassword('a guess', '!')));
      wrong.push(await took(() => verifyPassword('a guess', stored)));
    }
    expect(median(sso) / median(wrong)).toBeGreaterThan(0.5);
    expect(await verifyPassword('the right password', stored)).toBe(true);
  });
});
