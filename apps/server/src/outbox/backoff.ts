/**
 * When a delivery is tried again after a transient failure (docs/outbox.md):
 * base × 2^(attempt−1), capped at `max`, with full jitter over its upper half, and never sooner
 * than the provider's Retry-After. `random` is in [0, 1).
 */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  base: number,
  max: number,
  random: () => number,
): number {
  const backoff = Math.min(max, base * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.round(backoff / 2 + random() * (backoff / 2));
  return Math.max(jittered, retryAfterMs ?? 0);
}

/** The next try's time after `attempts` attempts failed transiently at `now`, or undefined: no more tries. */
export function nextTry(options: {
  readonly now: number;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly retryAfterMs: number | undefined;
  /** Auth codes: not sent after this. */
  readonly expiresAt: number | null;
  readonly base: number;
  readonly max: number;
  readonly random: () => number;
}): number | undefined {
  if (options.attempts >= options.maxAttempts) return undefined;
  const at =
    options.now +
    retryDelay(options.attempts, options.retryAfterMs, options.base, options.max, options.random);
  // A try that would fall after the code's validity is set at its end: the expiry sweep then
  // marks it expired, so it is never sent late.
  return options.expiresAt !== null && at > options.expiresAt ? options.expiresAt : at;
}
