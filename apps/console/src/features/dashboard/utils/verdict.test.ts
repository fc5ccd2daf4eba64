import { describe, expect, it } from 'vitest';
import { stats } from '../../../testing/data';
import { toChartData } from './chart-data';
import { verdictOf } from './verdict';

const period = (ok: number, refused: number) =>
  toChartData(
    stats({
      rows: [
        { bucket: '2026-11-19T10:00:00.000Z', operation: 'AuthCode', outcome: 'ok', count: ok },
        {
          bucket: '2026-11-19T10:00:00.000Z',
          operation: 'AuthCode',
          outcome: 'client-error',
          count: refused,
        },
      ],
    }),
    ['AuthCode'],
  );

describe('the Dashboard’s verdict', () => {
  it('with no period before to compare with, calls a high refusal rate on enough calls a concern', () => {
    const verdict = verdictOf({
      data: period(70, 30),
      previous: undefined,
      providers: [],
      periodLabel: 'day',
    });
    expect(verdict.ok).toBe(false);
    expect(verdict.concerns.map((c) => c.text)).toEqual(['30% of calls were refused or failed.']);
  });

  it('says nothing of a few refused calls among few', () => {
    const verdict = verdictOf({ data: period(5, 2), previous: undefined, providers: [], periodLabel: 'day' });
    expect(verdict.headline).toBe('All is well.');
  });

  it('compares with the period before when it has calls: the same rate is no concern', () => {
    const verdict = verdictOf({
      data: period(70, 30),
      previous: period(72, 28),
      providers: [],
      periodLabel: 'day',
    });
    expect(verdict.ok).toBe(true);
    expect(verdict.detail).toBe('100 calls in the day, 30% refused or failed (28% the period before).');
  });

  it('names an SMS pumping pattern when codes are refused for premium, foreign or consecutive numbers', () => {
    const refused = (error: string, count: number) => ({
      operation: 'AuthCode',
      status: 500,
      outcome: 'client-error' as const,
      error,
      count,
    });
    const verdict = verdictOf({
      data: period(70, 30),
      previous: period(70, 30),
      providers: [],
      periodLabel: 'day',
      errors: [
        refused('Invalid phone: codes are not sent to premium-rate numbers.', 3),
        refused('Invalid phone: codes are not sent to numbers of Nigeria (NG).', 2),
        refused(
          'Too many codes for the numbers +447400123xxx: at most 10 per hour. Try again in 12 minutes.',
          1,
        ),
        refused('Missing parameter: phone.', 20),
      ],
    });
    expect(verdict.concerns.map((c) => c.text)).toEqual([
      '6 login codes refused for premium-rate, foreign or consecutive numbers: someone may be feeding AuthCode numbers to make the school pay for SMS ("SMS pumping").',
    ]);
    const few = verdictOf({
      data: period(70, 30),
      previous: period(70, 30),
      providers: [],
      periodLabel: 'day',
      errors: [refused('Invalid phone: codes are not sent to premium-rate numbers.', 4)],
    });
    expect(few.ok).toBe(true);
  });
});
