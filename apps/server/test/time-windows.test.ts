/**
 * History's time windows (history/time-windows.ts): whatever the query, its cursor and the
 * partitions, the windows cover exactly the times it asks for, newest first, without overlap, and
 * all but the first and last are whole periods.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { timeWindows } from '../src/history/time-windows.js';
import { periodStart } from '../src/store/index.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-27T10:00:00Z');

describe('time windows', () => {
  it('is the query itself without partitions', () => {
    const query = { operation: 'AuthCode', from: 5 };
    expect(timeWindows(query, undefined, 'day', null, NOW)).toEqual([query]);
  });

  it('walks back from the current day: 1, 1, 2, 4 … days, then everything before the oldest partition', () => {
    const windows = timeWindows({}, undefined, 'day', NOW - 20 * DAY, NOW);
    const today = periodStart(NOW, 'day');
    expect(windows.slice(0, 4)).toEqual([
      { from: today, to: undefined },
      { from: today - DAY, to: today },
      { from: today - 3 * DAY, to: today - DAY },
      { from: today - 7 * DAY, to: today - 3 * DAY },
    ]);
    expect(windows.at(-1)).toEqual({ from: undefined, to: today - 15 * DAY });
    expect(windows).toHaveLength(6);
  });

  it('covers exactly what the query asks, newest first, in whole periods between the first and the last', () => {
    const time = fc.integer({ min: NOW - 400 * DAY, max: NOW + 30 * DAY });
    fc.assert(
      fc.property(
        fc.option(time, { nil: undefined }),
        fc.option(time, { nil: undefined }),
        fc.option(time, { nil: undefined }),
        fc.option(time, { nil: null }),
        fc.constantFrom('day' as const, 'month' as const),
        (from, to, cursorAt, oldest, period) => {
          const after = cursorAt === undefined ? undefined : { at: cursorAt, id: 1 };
          const windows = timeWindows({ from, to }, after, period, oldest, NOW);
          const upper = Math.min(
            to ?? Number.POSITIVE_INFINITY,
            after ? after.at + 1 : Number.POSITIVE_INFINITY,
          );
          const lower = from ?? Number.NEGATIVE_INFINITY;
          if (upper <= lower || oldest === null) {
            expect(windows).toEqual([{ from, to }]);
            return;
          }
          // Contiguous from the top down to the bottom, each inside the query's own bounds.
          let top = upper;
          for (const [i, w] of windows.entries()) {
            const hi = w.to ?? Number.POSITIVE_INFINITY;
            const lo = w.from ?? Number.NEGATIVE_INFINITY;
            expect(hi).toBe(top);
            expect(lo).toBeLessThan(i === 0 ? upper : hi);
            expect(lo).toBeGreaterThanOrEqual(lower);
            if (i > 0 && i < windows.length - 1) {
              expect(periodStart(lo, period)).toBe(lo);
              expect(periodStart(hi, period)).toBe(hi);
            }
            top = lo;
          }
          expect(top).toBe(lower);
          expect(windows.length).toBeLessThan(60);
        },
      ),
      { numRuns: 500 },
    );
  });
});
