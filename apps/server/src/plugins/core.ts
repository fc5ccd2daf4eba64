import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { createDispatcher, type Dispatcher } from '../delivery/dispatcher.js';
import { createAuthCodeLimits } from '../limits/authcode.js';
import { createOperationRunner, type OperationRunner } from '../operations/run.js';
import { createPushProvider, createSmsProvider } from '../providers/index.js';
import type { PushProvider, SmsProvider } from '../providers/types.js';
import { openStore, type Store } from '../store/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The validated configuration. */
    config: Config;
    /** The database and its repositories. */
    store: Store;
    /** The operation code every door (the .asmx bindings, the console) calls. */
    operations: OperationRunner;
    /** Sends queued deliveries. */
    dispatcher: Dispatcher;
    providers: { readonly sms: SmsProvider; readonly push: PushProvider };
  }
}

/** Shared services, decorated on the root instance; the store is closed with the server. */
export const corePlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const store = await openStore({ dataDir: config.dataDir, synchronous: config.SQLITE_SYNCHRONOUS });
    const providerLog = { logger: app.log.child({ component: 'provider' }) };
    const sms = createSmsProvider(config, providerLog);
    const push = createPushProvider(config, providerLog);
    const dispatcher = createDispatcher({
      store,
      sms,
      push,
      concurrency: config.DISPATCH_CONCURRENCY,
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      retryBaseMs: config.DELIVERY_RETRY_BASE_MS,
      retryMaxMs: config.DELIVERY_RETRY_MAX_MS,
      pollMs: config.DISPATCH_POLL_MS,
      // Longer than any attempt can take (each is bounded by the provider timeout).
      leaseMs: config.PROVIDER_TIMEOUT_MS * 3 + 5000,
      log: app.log.child({ component: 'dispatcher' }),
    });
    app.decorate('config', config);
    app.decorate('store', store);
    app.decorate('dispatcher', dispatcher);
    app.decorate('providers', { sms, push });
    app.decorate(
      'operations',
      createOperationRunner({
        store,
        defaultPhoneRegion: config.DEFAULT_PHONE_REGION,
        smsProvider: sms.name,
        pushProvider: push.name,
        smsTemplate: config.SMS_TEMPLATE,
        authCodeTtlMs: config.AUTHCODE_TTL,
        limits: createAuthCodeLimits({
          store,
          perPhone: config.AUTHCODE_LIMIT_PER_PHONE,
          perIp: config.AUTHCODE_LIMIT_PER_IP,
          perCountry: config.AUTHCODE_LIMIT_PER_COUNTRY,
        }),
        pendingPushes: () => store.deliveries.pendingPushes(),
        dispatchPushesNow: () => {
          dispatcher.dispatchPushesNow();
        },
      }),
    );
    // Retention: calls (with their deliveries) and audit entries older than RETENTION_DAYS go, at
    // start and daily.
    const retention = async () => {
      try {
        const before = Date.now() - config.RETENTION_DAYS * 86_400_000;
        const removed = await store.calls.deleteOlderThan(before);
        if (removed > 0) app.log.info({ removed, days: config.RETENTION_DAYS }, 'old calls removed');
        // The audit log is kept as long as the calls (docs/security.md).
        const audited = await store.audit.deleteOlderThan(before);
        if (audited > 0)
          app.log.info({ removed: audited, days: config.RETENTION_DAYS }, 'old audit entries removed');
      } catch (err) {
        app.log.error({ err }, 'retention sweep failed');
      }
    };
    let retentionTimer: NodeJS.Timeout | undefined;
    app.addHook('onReady', async () => {
      dispatcher.start();
      void retention();
      retentionTimer = setInterval(retention, 86_400_000);
      retentionTimer.unref();
    });
    // Attempts under way finish before the database closes; what is left is picked up next start.
    app.addHook('onClose', async () => {
      if (retentionTimer) clearInterval(retentionTimer);
      await dispatcher.stop();
      await store.close();
    });
  },
  { name: 'core' },
);
