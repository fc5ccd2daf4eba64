/**
 * A pause that can be cut short: a watch's wait between checks, ended early when something asks
 * for a check now (a connection lost) or when the watch closes (pg-watch.ts, replica.ts).
 */
export interface Pause {
  /** Waits `ms`, or until `wake()`. */
  wait(ms: number): Promise<void>;
  /** Ends the wait under way, if any. */
  wake(): void;
}

export function createPause(): Pause {
  let interrupt: (() => void) | undefined;
  return {
    wait: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          interrupt = undefined;
          resolve();
        }
        interrupt = done;
      }),
    wake: () => interrupt?.(),
  };
}
