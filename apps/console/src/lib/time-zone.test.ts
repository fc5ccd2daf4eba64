import { act, renderHook } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { getTimeZoneSetting, STORAGE_KEY, setTimeZoneSetting, useTimeZoneSetting } from './time-zone';

afterEach(() => {
  vi.restoreAllMocks();
  setTimeZoneSetting('local');
  localStorage.clear();
});

describe('the times setting', () => {
  it('is local time until the reader chooses UTC', () => {
    expect(getTimeZoneSetting()).toBe('local');
    const { result } = renderHook(() => useTimeZoneSetting());
    act(() => setTimeZoneSetting('utc'));
    expect(result.current).toBe('utc');
  });

  it('is kept in this browser: a reload starts with the choice', async () => {
    setTimeZoneSetting('utc');
    vi.resetModules();
    const reloaded = await import('./time-zone');
    expect(reloaded.getTimeZoneSetting()).toBe('utc');
  });

  it('follows a choice made in another tab', () => {
    const { result } = renderHook(() => useTimeZoneSetting());
    localStorage.setItem(STORAGE_KEY, 'utc');
    act(() => {
      window.dispatchEvent(new StorageEvent('storage', { key: STORAGE_KEY, newValue: 'utc' }));
    });
    expect(result.current).toBe('utc');
  });

  it('still applies when the browser refuses to store it', () => {
    vi.spyOn(Storage.prototype, 'setItem').mockImplementation(() => {
      throw new DOMException('refused', 'SecurityError');
    });
    const { result } = renderHook(() => useTimeZoneSetting());
    act(() => setTimeZoneSetting('utc'));
    expect(result.current).toBe('utc');
  });
});
