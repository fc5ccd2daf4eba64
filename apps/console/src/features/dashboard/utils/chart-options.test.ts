import type uPlot from 'uplot';
import { describe, expect, it } from 'vitest';
import { stats } from '../../../testing/data';
import { toChartData } from './chart-data';
import { barChartOptions, lineChartOptions } from './chart-options';

const data = toChartData(
  stats({
    rows: [{ bucket: '2026-11-19T10:00:00.000Z', operation: 'AuthCode', outcome: 'ok', count: 5 }],
  }),
  ['AuthCode'],
);

const rangeOf = (options: ReturnType<typeof barChartOptions>, max: number) => {
  const range = options.scales?.y?.range as (u: uPlot, min: number, max: number) => [number, number];
  return range({} as uPlot, 0, max);
};

describe('chart options', () => {
  it('counts calls in whole numbers: no tick at 2.5 calls', () => {
    const options = barChartOptions({
      data,
      bucket: 'hour',
      yLabel: 'Calls',
      stacked: [{ label: 'AuthCode', color: '#000', values: [5] }],
    });
    const incrs = options.axes?.[1]?.incrs as number[];
    expect(incrs.length).toBeGreaterThan(10);
    expect(incrs.every(Number.isInteger)).toBe(true);
    expect(incrs[0]).toBe(1);
  });

  it('keeps the highest bar and the highest latency point inside the chart, below its top', () => {
    const bars = barChartOptions({ data, bucket: 'hour', yLabel: 'Calls', stacked: [] });
    expect(rangeOf(bars, 10)).toEqual([0, 11]);
    expect(rangeOf(bars, 0)).toEqual([0, 1]);
    const lines = lineChartOptions({ data, bucket: 'hour', yLabel: 'Milliseconds', lines: [] });
    const [low, high] = rangeOf(lines, 84);
    expect(low).toBe(0);
    expect(high).toBeGreaterThan(84);
  });
});
