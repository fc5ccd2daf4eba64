import fp from 'fastify-plugin';
import { type CallRollups, createCallRollups } from '../stats/call-rollups.js';
import { startRollupJob } from '../stats/rollup-job.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Hourly roll-ups of the calls, for the Dashboard (stats/call-rollups.ts). */
    rollups: CallRollups;
  }
}

/**
 * The Dashboard's roll-ups, kept up in the background once the server is ready (stats/). Tests
 * that record calls at chosen past times leave the job off (`rollUp: false`).
 */
export const statsPlugin = fp<{ rollUp?: boolean | undefined }>(
  async (app, { rollUp = true }) => {
    const { store } = app;
    const rollups = createCallRollups(store.db, store.dialect);
    app.decorate('rollups', rollups);
    if (!rollUp) return;
    let job: { stop(): Promise<void> } | undefined;
    app.addHook('onReady', async () => {
      job = startRollupJob(store, rollups, (err) => app.log.error({ err }, 'rolling up calls failed'));
    });
    app.addHook('onClose', async () => {
      await job?.stop();
    });
  },
  { name: 'stats', dependencies: ['store'] },
);
