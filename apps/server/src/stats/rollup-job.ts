import type { Store } from '../store/index.js';

/** A roll-up made in turns: the calls' (call-rollups.ts), the deliveries' (delivery-rollups.ts). */
interface Rollup {
  rollUp(now: number, options?: { readonly budgetMs?: number }): Promise<number>;
}

/** How often the hours that ended are looked for. */
const ROLLUP_EVERY_MS = 60_000;

/**
 * The Dashboard's roll-ups (the calls' and the deliveries') kept up: the hours that ended are
 * rolled up once the database is reached (a long history in the background, a second's work at a
 * time) and then every minute, by one instance at a time (`store.exclusively`).
 */
export function startRollupJob(
  store: Store,
  rollups: readonly Rollup[],
  onError: (err: unknown) => void,
): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let stopping = false;
  const roll = (): Promise<void> => {
    // A second at a time: a long history is caught up in turns, and a stop does not wait.
    let more = false;
    running ??= store
      .exclusively('call-rollups', async () => {
        for (const rollup of rollups) {
          if ((await rollup.rollUp(Date.now(), { budgetMs: 1000 / rollups.length })) > 0) more = true;
        }
      })
      .then(() => {}, onError)
      .finally(() => {
        running = undefined;
        // Once this turn has let go of its lock (PostgreSQL), the next.
        if (more && !stopping) setImmediate(() => void roll());
      });
    return running;
  };
  void store.whenReady(roll, () => {});
  const timer = setInterval(roll, ROLLUP_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      stopping = true;
      clearInterval(timer);
      await running;
    },
  };
}
