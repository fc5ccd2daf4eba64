import { act, render, screen } from '@testing-library/react';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { setTimeZoneSetting } from '../../lib/time-zone';
import { Timestamp } from './timestamp';

// A reader whose zone is not UTC, set before any time is formatted (formatters are made on first use).
const savedTz = process.env.TZ;
process.env.TZ = 'Asia/Kolkata';
afterAll(() => {
  if (savedTz === undefined) delete process.env.TZ;
  else process.env.TZ = savedTz;
});

const NOW = Date.parse('2026-11-23T18:09:49.000Z');
const MIN = 60_000;
const at = (msFromNow: number) => new Date(NOW + msFromNow).toISOString();
const time = () => screen.getByRole('time');

describe('Timestamp', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: NOW });
  });
  afterEach(() => {
    vi.useRealTimers();
    setTimeZoneSetting('local');
  });

  it('says how long ago a recent moment was, the exact UTC time on hover, and keeps up', () => {
    const iso = at(-3 * MIN - 10_000);
    render(<Timestamp iso={iso} />);
    expect(time()).toHaveTextContent(/^3 min ago$/);
    expect(time()).toHaveAttribute('datetime', iso);
    expect(time()).toHaveAttribute('title', '2026-11-23 18:06:39.000 UTC');

    act(() => vi.advanceTimersByTime(30_000));
    expect(time()).toHaveTextContent(/^3 min ago$/);
    act(() => vi.advanceTimersByTime(30_000));
    expect(time()).toHaveTextContent(/^4 min ago$/);
  });

  it('says how soon a coming moment is', () => {
    render(<Timestamp iso={at(5 * MIN + 1000)} due />);
    expect(time()).toHaveTextContent(/^in 5 min$/);
  });

  it('never puts something that happened in the future (a server clock a little ahead)', () => {
    render(<Timestamp iso={at(20_000)} />);
    expect(time()).toHaveTextContent(/^just now$/);
  });

  it('gives the time to compare down a list, then how long ago, quieter', () => {
    render(<Timestamp iso={at(-3 * MIN)} variant="clock" />);
    expect(time()).toHaveTextContent(/^(23:36:49|11:36:49 PM)$/);
    expect(time().parentElement).toHaveTextContent(/· 3 min ago$/);
  });

  it('gives the date and time with its zone beyond a day, in UTC once the reader asks for it', () => {
    const iso = at(-2 * 24 * 60 * MIN);
    render(<Timestamp iso={iso} />);
    expect(time()).toHaveTextContent(/(23:39:49|11:39:49 PM) GMT\+5:30$/);
    expect(time()).toHaveTextContent(/21/);
    expect(time()).toHaveAttribute('title', '2026-11-21 18:09:49.000 UTC');

    act(() => setTimeZoneSetting('utc'));
    expect(time()).toHaveTextContent(/18:09:49 UTC$|06:09:49 PM UTC$/);
  });

  it('gives the date and time of a recent moment too when asked to be absolute (lists read row by row)', () => {
    render(<Timestamp iso={at(-10_000)} variant="absolute" />);
    expect(time()).toHaveTextContent(/23:39:39 GMT\+5:30$|11:39:39 PM GMT\+5:30$/);
  });

  it('stops its clock once no relative time is shown', () => {
    const view = render(
      <>
        <Timestamp iso={at(-MIN)} />
        <Timestamp iso={at(-2 * MIN)} />
      </>,
    );
    // One clock for the page, however many times it shows.
    expect(vi.getTimerCount()).toBe(1);
    view.unmount();
    expect(vi.getTimerCount()).toBe(0);
  });
});
