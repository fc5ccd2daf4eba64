/**
 * Refusals anyone can cause without an account (a single sign-on callback with a made-up code and
 * state) would let a stranger fill the audit log as fast as they can send requests. Per address,
 * the first refusal of a window is written as it comes; the ones after it in the window are
 * counted and written as one row with their number when the window is over (or at close).
 * Bounded: at most MAX_ADDRESSES addresses are followed; past that, and past MAX_ROWS_PER_WINDOW
 * first rows in all, refusals are only counted, in one row of their own per window.
 */
export const FOLD_WINDOW_MS = 10 * 60_000;
const MAX_ADDRESSES = 1000;
const MAX_ROWS_PER_WINDOW = 100;

export interface FoldedRow {
  /** The address (null: the row for addresses past the bounds). */
  readonly ip: string | null;
  /** The first refusal's details, or for a summary how many more came and over what time. */
  readonly details: Record<string, unknown>;
}

interface Seen {
  readonly since: number;
  more: number;
  lastAt: number;
  lastReason: string;
}

export function createAuditFold(write: (row: FoldedRow) => void, now: () => number = Date.now) {
  const byIp = new Map<string, Seen>();
  let windowStart = now();
  let firstRows = 0;
  let overflow: Seen | undefined;

  const summary = (ip: string | null, seen: Seen): void => {
    if (seen.more === 0) return;
    write({
      ip,
      details: {
        reason: 'repeated refusals',
        count: seen.more,
        since: new Date(seen.since).toISOString(),
        until: new Date(seen.lastAt).toISOString(),
        lastReason: seen.lastReason,
      },
    });
  };

  /** Writes the summaries of the windows that are over (all of them with `all`). */
  function flush(all = false): void {
    const at = now();
    for (const [ip, seen] of byIp) {
      if (all || at - seen.since >= FOLD_WINDOW_MS) {
        summary(ip, seen);
        byIp.delete(ip);
      }
    }
    if (all || at - windowStart >= FOLD_WINDOW_MS) {
      if (overflow) summary(null, overflow);
      overflow = undefined;
      windowStart = at;
      firstRows = 0;
    }
  }

  return {
    /** A refusal from `ip` with `details`: written now, or counted for a summary row. */
    refused(ip: string, details: Record<string, unknown> & { reason: string }): void {
      flush();
      const at = now();
      const seen = byIp.get(ip);
      if (seen) {
        seen.more++;
        seen.lastAt = at;
        seen.lastReason = details.reason;
        return;
      }
      if (byIp.size >= MAX_ADDRESSES || firstRows >= MAX_ROWS_PER_WINDOW) {
        overflow ??= { since: at, more: 0, lastAt: at, lastReason: details.reason };
        overflow.more++;
        overflow.lastAt = at;
        overflow.lastReason = details.reason;
        return;
      }
      byIp.set(ip, { since: at, more: 0, lastAt: at, lastReason: details.reason });
      firstRows++;
      write({ ip, details });
    },
    /** Writes what is pending whose window is over; `all`: everything (at close). */
    flush,
  };
}
