import { describe, expect, it } from 'vitest';
import { stats } from '../../../testing/data';
import { toChartData, UNKNOWN_OPERATION } from './chart-data';

describe('toChartData', () => {
  it('lays sparse rows on every bucket of the period, per operation, with the error rate', () => {
    const data = toChartData(
      stats({
        from: '2026-11-20T06:30:00.000Z',
        to: '2026-11-20T09:30:00.000Z',
        bucket: 'hour',
        rows: [
          { bucket: '2026-11-20T06:00:00.000Z', operation: 'AuthCode', outcome: 'ok', count: 3 },
          { bucket: '2026-11-20T06:00:00.000Z', operation: 'AuthCode', outcome: 'client-error', count: 1 },
          { bucket: '2026-11-20T08:00:00.000Z', operation: null, outcome: 'server-error', count: 2 },
        ],
      }),
      ['AuthCode', 'pushNoti'],
    );
    expect(data.x).toEqual([6, 7, 8, 9].map((h) => Date.parse(`2026-11-20T0${h}:00:00.000Z`) / 1000));
    expect(data.operations).toEqual(['AuthCode', 'pushNoti', UNKNOWN_OPERATION]);
    expect(data.perOperation).toEqual([
      [4, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 2, 0],
    ]);
    expect(data.errorRate).toEqual([25, null, 100, null]);
    expect(data.totals).toMatchObject({ calls: 6, clientErrors: 1, serverErrors: 2, errorRate: 50 });
    expect(data.totals.worst).toEqual({ at: Date.parse('2026-11-20T08:00:00.000Z'), rate: 100 });
  });
});
