import fp from 'fastify-plugin';
import { floorHour } from '../stats/call-rollups.js';
import { isLockTimeout, isUnavailableError } from '../store/index.js';

/**
 * Retention: calls (with their deliveries, the outbox's), their roll-ups and audit entries older
 * than RETENTION_DAYS (to the hour before) go, at start and daily. On PostgreSQL calls,
 * deliveries and attempts go a whole period at a time once all of it is past
 * (store/partitions.ts), so they are kept up to one PARTITION_PERIOD longer; SQLite deletes them
 * in batches.
 */
export const retentionPlugin = fp(
  async (app) => {
    const { config, store, history, outbox, rollups, deliveryRollups } = app;
    const sweep = async () => {
      try {
        // One instance at a time (the others skip this round; the next is a day later).
        await store.exclusively('retention', async () => {
          // At a whole hour: the deliveries' roll-ups go by the hour, and with them the counts
          // by state (stats/delivery-rollups.ts) add up to what is kept.
          const before = floorHour(Date.now() - config.RETENTION_DAYS * 86_400_000);
          // PostgreSQL: whole periods first (store/partitions.ts); what is left in batches is what
          // no period partition holds (rows from before partitioning, the default partition's).
          let batchBelow = before;
          let partitionCalls = 0;
          if (store.partitions) {
            // Tables never free for minutes (store/partitions.ts): tomorrow's run retires them;
            // the rest of this one goes on.
            const retired = await store.partitions.retire(before).catch((err: unknown) => {
              if (!isLockTimeout(err)) throw err;
              app.log.warn('old partitions not dropped: their tables were never free, tried again tomorrow');
              return { partitions: [], calls: 0, moved: 0 };
            });
            partitionCalls = retired.calls;
            if (retired.partitions.length > 0)
              app.log.info(
                {
                  partitions: retired.partitions,
                  calls: retired.calls,
                  kept: retired.moved,
                  days: config.RETENTION_DAYS,
                },
                'old partitions dropped',
              );
            batchBelow = Math.min(before, (await store.partitions.batchDeletedBelow()) ?? before);
          }
          const removed = await history.deleteOlderThan(batchBelow, { alongside: outbox.deleteForCalls });
          await rollups.deleteOlderThan(before);
          await deliveryRollups.deleteOlderThan(before);
          if (removed > 0) app.log.info({ removed, days: config.RETENTION_DAYS }, 'old calls removed');
          app.metrics.observeRetention({ at: Date.now(), partitionCalls, batchCalls: removed });
          // The audit log is kept as long as the calls (docs/security.md).
          const audited = await store.audit.deleteOlderThan(before);
          if (audited > 0)
            app.log.info({ removed: audited, days: config.RETENTION_DAYS }, 'old audit entries removed');
          // Limit slots no window can still see (the longest limit window is far below a day).
          await store.limits.sweep(Date.now() - 86_400_000);
          // Instances that stopped without saying so (their claims were taken over long ago).
          await store.forgetInstances(Date.now() - 86_400_000);
        });
      } catch (err) {
        // The database away: tried again at the next sweep; the outage itself is reported once.
        if (isUnavailableError(err))
          app.log.debug({ err }, 'retention sweep skipped: the database is unavailable');
        else app.log.error({ err }, 'retention sweep failed');
      }
    };
    let timer: NodeJS.Timeout | undefined;
    app.addHook('onReady', async () => {
      // Once the database has been reached (it may not be yet, when the server starts without it).
      void store.whenReady(sweep, () => {});
      timer = setInterval(sweep, 86_400_000);
      timer.unref();
    });
    app.addHook('onClose', async () => {
      if (timer) clearInterval(timer);
    });
  },
  { name: 'retention', dependencies: ['config', 'store', 'history', 'outbox', 'stats', 'metrics'] },
);
