import fp from 'fastify-plugin';
import { type CallRollups, createCallRollups } from '../stats/call-rollups.js';
import { createDeliveryRollups, type DeliveryRollups } from '../stats/delivery-rollups.js';
import { startRollupJob } from '../stats/rollup-job.js';
import { isUnavailableError } from '../store/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Hourly roll-ups of the calls, for the Dashboard (stats/call-rollups.ts). */
    rollups: CallRollups;
    /** Hourly roll-ups of the deliveries, for the Dashboard (stats/delivery-rollups.ts). */
    deliveryRollups: DeliveryRollups;
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
    const deliveryRollups = createDeliveryRollups(store.db, store.dialect);
    app.decorate('rollups', rollups);
    app.decorate('deliveryRollups', deliveryRollups);
    if (!rollUp) return;
    let job: { stop(): Promise<void> } | undefined;
    app.addHook('onReady', async () => {
      job = startRollupJob(store, [rollups, deliveryRollups], (err) => {
        // The database away: the next step catches up; the outage itself is reported once.
        if (isUnavailableError(err))
          app.log.debug({ err }, 'rolling up calls and deliveries waits: the database is unavailable');
        else app.log.error({ err }, 'rolling up calls or deliveries failed');
      });
    });
    app.addHook('onClose', async () => {
      await job?.stop();
    });
  },
  { name: 'stats', dependencies: ['store'] },
);
