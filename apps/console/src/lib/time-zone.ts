import { useSyncExternalStore } from 'react';

/**
 * Where the console shows times: the reader's own time zone, or UTC (what exports, the API and the
 * server's log use). Kept in this browser (localStorage), for every page and tab at once.
 */
export type TimeZoneSetting = 'local' | 'utc';

/** The localStorage key it is kept under. */
export const STORAGE_KEY = 'school-console.time-zone';
const listeners = new Set<() => void>();

function read(): TimeZoneSetting {
  try {
    return globalThis.localStorage?.getItem(STORAGE_KEY) === 'utc' ? 'utc' : 'local';
  } catch {
    // Storage refused (a privacy setting): the default.
    return 'local';
  }
}

let current: TimeZoneSetting = read();

function notify(): void {
  for (const listener of listeners) listener();
}

/** The setting now, for code outside React (plain-text times in a sentence). */
export const getTimeZoneSetting = (): TimeZoneSetting => current;

export function setTimeZoneSetting(value: TimeZoneSetting): void {
  try {
    globalThis.localStorage?.setItem(STORAGE_KEY, value);
  } catch {
    // Not kept beyond this page, but applied.
  }
  if (value === current) return;
  current = value;
  notify();
}

/** Another tab changed it. */
function onStorage(event: StorageEvent): void {
  if (event.key !== STORAGE_KEY) return;
  const value = read();
  if (value === current) return;
  current = value;
  notify();
}

function subscribe(listener: () => void): () => void {
  if (listeners.size === 0) window.addEventListener('storage', onStorage);
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0) window.removeEventListener('storage', onStorage);
  };
}

/** The setting, re-rendering when it changes (here or in another tab). */
export const useTimeZoneSetting = (): TimeZoneSetting =>
  useSyncExternalStore(subscribe, getTimeZoneSetting, getTimeZoneSetting);

/** The reader's time zone as the browser names it (e.g. "Europe/London"). */
export const localTimeZoneName = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone;
