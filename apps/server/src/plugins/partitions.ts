import fp from 'fastify-plugin';
import { isLockTimeout, isUnavailableError } from '../store/index.js';
import type { PartitionWatch } from './metrics.js';

/**
 * PostgreSQL's time partitions made ahead (store/partitions.ts): at start and hourly, by one
 * instance at a time, the periods from the current one's start to at least 7 days and one period
 * ahead. A run that misses its locks (a long query on the table) is simply the next hour's to do:
 * a week ahead leaves 168 of them before a call would go to the default partition.
 */
export const partitionsPlugin = fp(
  async (app) => {
    const { store } = app;
    const partitions = store.partitions;
    if (!partitions) return;
    const log = app.log.child({ component: 'partitions' });
    let found: PartitionWatch = { coveredUntil: null, defaultRows: null };
    app.metrics.watchPartitions(() => found);
    const run = async () => {
      try {
        await store.exclusively('partitions', async () => {
          const made = await partitions.ensureAhead(Date.now());
          if (made.length > 0) log.info({ made, period: partitions.period }, 'partitions made ahead');
        });
        // Every instance reports what it finds, whichever made them.
        const now = Date.now();
        const stray = await partitions.defaultRows(1000);
        found = { coveredUntil: now + (await partitions.coveredAhead(now)), defaultRows: stray };
        if (stray > 0)
          log.warn(
            { rows: stray },
            'rows in the default partitions: a period had no partition when they were written, or deliveries on their way outlived retention',
          );
      } catch (err) {
        if (isUnavailableError(err)) log.debug({ err }, 'partitions not made: the database is unavailable');
        else if (isLockTimeout(err))
          log.info('partitions not made: their tables were busy, tried again in an hour');
        else log.error({ err }, 'partitions not made');
      }
    };
    let timer: NodeJS.Timeout | undefined;
    app.addHook('onReady', async () => {
      void store.whenReady(run, () => {});
      timer = setInterval(run, 3_600_000);
      timer.unref();
    });
    app.addHook('onClose', async () => {
      if (timer) clearInterval(timer);
    });
  },
  { name: 'partitions', dependencies: ['store', 'metrics'] },
);
