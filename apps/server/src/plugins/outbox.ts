import fp from 'fastify-plugin';
import { createOutbox, type Outbox } from '../outbox/index.js';
import { lockDeliveryRollupsForResend } from '../stats/delivery-rollups.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The deliveries, from their call's commit to the provider (outbox/). */
    outbox: Outbox;
  }
}

/**
 * The outbox, on the open store: it sends once the server is ready, and its attempts under way
 * finish before the store closes (what is left is picked up at the next start).
 */
export const outboxPlugin = fp(
  async (app) => {
    const { config, providers, store } = app;
    const outbox = createOutbox({
      store,
      sms: providers.sms,
      smsFallback: providers.smsFallback,
      push: providers.push,
      limits: {
        sms: {
          concurrency: config.smsConcurrency,
          perSecond: config.SMS_RATE_LIMIT,
          slowMs: config.PROVIDER_TIMEOUT_MS / 4,
        },
        push: {
          concurrency: config.pushConcurrency,
          perSecond: config.PUSH_RATE_LIMIT,
          slowMs: config.PROVIDER_TIMEOUT_MS / 4,
        },
      },
      sealer: app.sealer,
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      retryBaseMs: config.DELIVERY_RETRY_BASE_MS,
      retryMaxMs: config.DELIVERY_RETRY_MAX_MS,
      pollMs: config.DISPATCH_POLL_MS,
      leaseMs: config.deliveryLeaseMs,
      hedgeAfterMs: config.SMS_HEDGE_AFTER,
      log: app.log.child({ component: 'outbox' }),
      onSentAfterUnsure: (kind, provider, unsure) =>
        app.metrics.observeSentAfterUnsure(kind, provider, unsure),
      // A resent delivery is dead no more: its hours leave the Dashboard's roll-ups in its commit.
      onResend: async (trx) => (await lockDeliveryRollupsForResend(trx, store.dialect)).reopenHoursFrom,
    });
    app.decorate('outbox', outbox);
    app.metrics.watchCircuits(() => outbox.circuits());
    app.addHook('onReady', async () => {
      outbox.start();
    });
    app.addHook('onClose', async () => {
      await outbox.stop();
    });
  },
  { name: 'outbox', dependencies: ['config', 'providers', 'metrics', 'secrets', 'store'] },
);
