import { useSyncExternalStore } from 'react';

/** How often relative times ("3 min ago") are brought up to date. */
export const TICK_MS = 30_000;

let now = Date.now();
let timer: ReturnType<typeof setInterval> | undefined;
const listeners = new Set<() => void>();

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  // One timer for the whole page, running while anything shows a relative time.
  timer ??= setInterval(() => {
    now = Date.now();
    for (const l of listeners) l();
  }, TICK_MS);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}

function getSnapshot(): number {
  // Nothing has been ticking: start from the time now, not from when it last stopped. (Two reads
  // in one render are well within the second, so they agree.)
  if (timer === undefined && Math.abs(Date.now() - now) > 1000) now = Date.now();
  return now;
}

/** The current time in ms, shared by every component that asks and updated every TICK_MS. */
export const useNow = (): number => useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
