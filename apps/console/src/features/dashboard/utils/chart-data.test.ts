import { describe, expect, it } from 'vitest';
import { stats } from '../../../testing/data';
import { bucketRange, seriesAt, stack, toChartData, UNKNOWN_OPERATION } from './chart-data';
import { bucketTicks } from './time-axis';

const at = (hour: number) => `2026-11-20T${String(hour).padStart(2, '0')}:00:00.000Z`;

describe('toChartData', () => {
  it('lays sparse rows on every bucket of the period, per operation, with errors, latency and deliveries', () => {
    const data = toChartData(
      stats({
        from: '2026-11-20T06:30:00.000Z',
        to: '2026-11-20T09:30:00.000Z',
        bucket: 'hour',
        rows: [
          { bucket: at(6), operation: 'AuthCode', outcome: 'ok', count: 3 },
          { bucket: at(6), operation: 'AuthCode', outcome: 'client-error', count: 1 },
          { bucket: at(8), operation: null, outcome: 'server-error', count: 2 },
        ],
        latency: [
          { bucket: at(6), count: 4, p50Ms: 12.5, p95Ms: 80 },
          { bucket: at(8), count: 2, p50Ms: 3, p95Ms: 4 },
        ],
        deliveries: [
          { bucket: at(6), sent: 2, logged: 1, dead: 1, expired: 0, waiting: 0, failedAttempts: 3 },
        ],
      }),
      ['AuthCode', 'pushNoti'],
    );
    expect(data.x).toEqual([6, 7, 8, 9].map((h) => Date.parse(at(h)) / 1000));
    expect(data.operations).toEqual(['AuthCode', 'pushNoti', UNKNOWN_OPERATION]);
    expect(data.perOperation).toEqual([
      [4, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 2, 0],
    ]);
    expect(data.clientErrors).toEqual([1, 0, 0, 0]);
    expect(data.serverErrors).toEqual([0, 0, 2, 0]);
    expect(data.errorRate).toEqual([25, null, 100, null]);
    expect(data.p50).toEqual([12.5, null, 3, null]);
    expect(data.p95).toEqual([80, null, 4, null]);
    expect(data.deliveries.dead).toEqual([1, 0, 0, 0]);
    expect(data.totals).toMatchObject({ calls: 6, clientErrors: 1, serverErrors: 2, errorRate: 50 });
    expect(data.totals.deliveries).toEqual({
      sent: 2,
      logged: 1,
      waiting: 0,
      expired: 0,
      dead: 1,
      failedAttempts: 3,
    });
    expect(data.totals.worst).toEqual({ at: Date.parse(at(8)), rate: 100 });
    // The first and last buckets are cut to the period (History then lists what the bar counts).
    expect(bucketRange(data, 0)).toEqual({
      from: Date.parse('2026-11-20T06:30:00.000Z'),
      to: Date.parse(at(7)),
    });
    expect(bucketRange(data, 1)).toEqual({ from: Date.parse(at(7)), to: Date.parse(at(8)) });
    expect(bucketRange(data, 3)).toEqual({
      from: Date.parse(at(9)),
      to: Date.parse('2026-11-20T09:30:00.000Z'),
    });
  });
});

describe('stacked bars', () => {
  it('draws each series on top of those below, and tells which one a point falls in', () => {
    const series = [
      [2, 0, 1],
      [3, 4, 0],
    ];
    expect(stack(series)).toEqual([
      [2, 0, 1],
      [5, 4, 1],
    ]);
    expect(seriesAt(series, 0, 1.5)).toBe(0);
    expect(seriesAt(series, 0, 4)).toBe(1);
    // An empty series is never picked: bucket 1 has only the second one.
    expect(seriesAt(series, 1, 0.2)).toBe(1);
    expect(seriesAt(series, 0, 6)).toBe(-1);
  });
});

describe('time axis', () => {
  it('ticks on day buckets every day, or every week when a day each will not fit', () => {
    const days = Array.from({ length: 30 }, (_, i) => Date.UTC(2026, 10, 1 + i));
    expect(bucketTicks('day', days.slice(0, 7), 800)).toEqual(days.slice(0, 7));
    const weekly = bucketTicks('day', days, 400);
    expect(weekly.length).toBeLessThanOrEqual(Math.floor(400 / 64));
    expect(weekly.every((t) => days.includes(t))).toBe(true);
    expect((weekly[1] ?? 0) - (weekly[0] ?? 0)).toBeGreaterThan(86_400_000);
  });

  it('ticks on hour buckets at round hours', () => {
    const hours = Array.from({ length: 24 * 7 }, (_, i) => Date.UTC(2026, 10, 1) + i * 3_600_000);
    const ticks = bucketTicks('hour', hours, 600);
    expect(ticks.length).toBeGreaterThan(1);
    expect(ticks.length).toBeLessThanOrEqual(Math.floor(600 / 56));
    expect(ticks.every((t) => hours.includes(t) && new Date(t).getMinutes() === 0)).toBe(true);
  });
});
