import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { formatClock, formatDateTime, formatRelative, formatUtcExact } from './format';
import { setTimeZoneSetting } from './time-zone';

// A reader whose zone is not UTC, set before any time is formatted (formatters are made on first use).
const savedTz = process.env.TZ;
process.env.TZ = 'Asia/Kolkata';
afterAll(() => {
  if (savedTz === undefined) delete process.env.TZ;
  else process.env.TZ = savedTz;
});
afterEach(() => setTimeZoneSetting('local'));

const AT = '2026-11-23T18:09:49.123Z';

describe('formatDateTime', () => {
  it('writes the time in UTC, named so', () => {
    expect(formatDateTime(AT, 'utc', 'en-GB')).toBe('23 Nov 2026, 18:09:49 UTC');
    expect(formatDateTime(AT, 'utc', 'en-US')).toBe('Nov 23, 2026, 06:09:49 PM UTC');
  });

  it("writes the time in the reader's zone, with the zone's name", () => {
    expect(formatDateTime(AT, 'local', 'en-GB')).toBe('23 Nov 2026, 23:39:49 GMT+5:30');
  });

  it('follows the console setting unless told the zone', () => {
    expect(formatDateTime(AT, undefined, 'en-GB')).toBe('23 Nov 2026, 23:39:49 GMT+5:30');
    setTimeZoneSetting('utc');
    expect(formatDateTime(AT, undefined, 'en-GB')).toBe('23 Nov 2026, 18:09:49 UTC');
  });

  it('gives back what is not a time as it is', () => {
    expect(formatDateTime('soon', 'utc')).toBe('soon');
  });
});

describe('formatUtcExact', () => {
  it('writes the exact instant in UTC, to the millisecond, whatever the setting', () => {
    expect(formatUtcExact(AT)).toBe('2026-11-23 18:09:49.123 UTC');
    expect(formatUtcExact('2026-11-23T20:09:49+02:00')).toBe('2026-11-23 18:09:49.000 UTC');
    expect(formatUtcExact('soon')).toBe('soon');
  });
});

describe('formatRelative', () => {
  const now = Date.parse(AT);
  const ago = (ms: number) => new Date(now - ms).toISOString();
  const MIN = 60_000;
  const HOUR = 60 * MIN;

  it('says how long ago, in whole minutes then hours', () => {
    expect(formatRelative(ago(0), now)).toBe('just now');
    expect(formatRelative(ago(59_000), now)).toBe('just now');
    expect(formatRelative(ago(MIN), now)).toBe('1 min ago');
    expect(formatRelative(ago(3 * MIN + 50_000), now)).toBe('3 min ago');
    expect(formatRelative(ago(59 * MIN), now)).toBe('59 min ago');
    expect(formatRelative(ago(HOUR), now)).toBe('1 hr ago');
    expect(formatRelative(ago(2 * HOUR - 1000), now)).toBe('1 hr ago');
    expect(formatRelative(ago(23 * HOUR + 59 * MIN), now)).toBe('23 hr ago');
  });

  it('says how soon, for times to come (a next attempt)', () => {
    expect(formatRelative(ago(-20_000), now)).toBe('in under a minute');
    expect(formatRelative(ago(-5 * MIN), now)).toBe('in 5 min');
    expect(formatRelative(ago(-3 * HOUR), now)).toBe('in 3 hr');
  });

  it('has nothing to say a day or more away, or of what is not a time', () => {
    expect(formatRelative(ago(24 * HOUR), now)).toBeUndefined();
    expect(formatRelative(ago(-30 * HOUR), now)).toBeUndefined();
    expect(formatRelative('soon', now)).toBeUndefined();
  });
});

describe('formatClock', () => {
  const now = Date.parse(AT);
  it('writes the time alone today, the day before it earlier, the year before that', () => {
    expect(formatClock('2026-11-23T08:05:12Z', now, 'utc', 'en-GB')).toBe('08:05:12 UTC');
    expect(formatClock('2026-11-22T08:05:12Z', now, 'utc', 'en-GB')).toBe('22 Nov, 08:05:12 UTC');
    expect(formatClock('2025-11-23T08:05:12Z', now, 'utc', 'en-GB')).toBe('23 Nov 2025, 08:05:12 UTC');
  });

  it("counts days in the reader's zone, and names only UTC", () => {
    // 18:09 UTC is already the next day in Kolkata (23:39): 19:00 UTC is tomorrow there too.
    expect(formatClock('2026-11-23T19:00:00Z', now, 'local', 'en-GB')).toBe('24 Nov, 00:30:00');
    expect(formatClock('2026-11-23T10:00:00Z', now, 'local', 'en-GB')).toBe('15:30:00');
  });
});

describe('formatRelative of something that happened', () => {
  it('says "just now" of a time a little ahead of the browser’s clock', () => {
    const now = Date.parse(AT);
    expect(formatRelative(new Date(now + 20_000).toISOString(), now, { past: true })).toBe('just now');
    expect(formatRelative(new Date(now + 20_000).toISOString(), now)).toBe('in under a minute');
    expect(formatRelative(new Date(now - 5 * 60_000).toISOString(), now, { past: true })).toBe('5 min ago');
  });
});
