import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { createDispatcher, type Dispatcher } from '../delivery/dispatcher.js';
import { createAuthCodeLimits } from '../limits/authcode.js';
import { createOperationRunner, type OperationRunner } from '../operations/run.js';
import { createPushProvider, createSmsProvider } from '../providers/index.js';
import type { PushProvider, SmsProvider } from '../providers/types.js';
import { loadSealer } from '../secrets/sealer.js';
import { openStore, type Store } from '../store/index.js';
import { instrumentProviders } from './metrics.js';

/**
 * The server's shared services, one named plugin each, decorated on the root instance and
 * declaring what they need: config → store, providers → dispatcher → operations; retention.
 * Closing runs in reverse (the dispatcher's attempts finish before the store closes).
 */

declare module 'fastify' {
  interface FastifyInstance {
    /** The validated configuration. */
    config: Config;
    /** The database and its repositories. */
    store: Store;
    /** The SMS and push providers deliveries go through. */
    providers: { readonly sms: SmsProvider; readonly push: PushProvider };
    /** Sends queued deliveries. */
    dispatcher: Dispatcher;
    /** The operation code every door (the .asmx bindings, the console) calls. */
    operations: OperationRunner;
  }
}

export const configPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    app.decorate('config', config);
  },
  { name: 'config' },
);

/**
 * The database; what is pending is committed and it is closed with the server. PostgreSQL that
 * cannot be reached at start does not stop the server: it starts, answers 503, and connects when
 * it can (docs/operations.md#faults).
 */
export const storePlugin = fp<{ onFatal?: ((err: Error) => void) | undefined }>(
  async (app, { onFatal }) => {
    const { config } = app;
    const log = app.log.child({ component: 'store' });
    const store = await openStore({
      dataDir: config.dataDir,
      synchronous: config.SQLITE_SYNCHRONOUS,
      databaseUrl: config.DATABASE_URL,
      poolSize: config.DATABASE_POOL_SIZE,
      log,
      sealer: loadSealer({ key: config.CODE_ENCRYPTION_KEY, dataDir: config.dataDir }),
      onWarning: (message, err) => log.warn({ err }, message),
      onDiskFull: () => app.diskSpace.checkNow(),
    });
    app.log.info(
      { database: store.dialect, instance: store.instance, up: store.availability.status().up },
      store.dialect === 'postgres' ? 'store: PostgreSQL' : 'store: SQLite',
    );
    app.decorate('store', store);
    // Not reached at start, then refused for good (credentials, a failing migration): stop.
    void store.whenReady(
      () => {},
      (err) => {
        const fatal = err instanceof Error ? err : new Error(String(err));
        log.fatal({ err: fatal }, `the database cannot be used: ${fatal.message}`);
        onFatal?.(fatal);
      },
    );
    // Auth codes a release before sealing kept in clear are sealed now.
    void store.whenReady(
      async () => {
        const sealed = await store.deliveries.sealLegacyTexts();
        if (sealed > 0) log.info({ sealed }, 'auth codes waiting to be sent are sealed now');
      },
      (err) => log.error({ err }, 'could not seal the auth codes waiting to be sent'),
    );
    app.addHook('onClose', async () => {
      await store.close();
    });
  },
  { name: 'store', dependencies: ['config', 'disk-space'] },
);

export const providersPlugin = fp(
  async (app) => {
    const providerLog = { logger: app.log.child({ component: 'provider' }) };
    // Every send is timed (school_provider_request_duration_seconds).
    app.decorate(
      'providers',
      instrumentProviders(
        {
          sms: createSmsProvider(app.config, providerLog),
          push: createPushProvider(app.config, providerLog),
        },
        app.metrics,
      ),
    );
  },
  { name: 'providers', dependencies: ['config', 'metrics'] },
);

/** The outbox's dispatcher: started once the server is ready, its attempts finished at close. */
export const dispatcherPlugin = fp(
  async (app) => {
    const { config, store, providers } = app;
    const dispatcher = createDispatcher({
      store,
      sms: providers.sms,
      push: providers.push,
      lanes: {
        sms: {
          concurrency: config.SMS_CONCURRENCY ?? config.DISPATCH_CONCURRENCY ?? 200,
          perSecond: config.SMS_RATE_LIMIT,
        },
        push: {
          concurrency: config.PUSH_CONCURRENCY ?? config.DISPATCH_CONCURRENCY ?? 32,
          perSecond: config.PUSH_RATE_LIMIT,
        },
      },
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      retryBaseMs: config.DELIVERY_RETRY_BASE_MS,
      retryMaxMs: config.DELIVERY_RETRY_MAX_MS,
      pollMs: config.DISPATCH_POLL_MS,
      // Longer than any attempt can take (each is bounded by the provider timeout).
      leaseMs: config.PROVIDER_TIMEOUT_MS * 3 + 5000,
      log: app.log.child({ component: 'dispatcher' }),
    });
    app.decorate('dispatcher', dispatcher);
    app.addHook('onReady', async () => {
      dispatcher.start();
    });
    // Attempts under way finish before the database closes; what is left is picked up next start.
    app.addHook('onClose', async () => {
      await dispatcher.stop();
    });
  },
  { name: 'dispatcher', dependencies: ['config', 'store', 'providers'] },
);

/** The operation runner with its handlers and AuthCode's limits. */
export const operationsPlugin = fp(
  async (app) => {
    const { config, store, providers, dispatcher } = app;
    app.decorate(
      'operations',
      createOperationRunner({
        store,
        defaultPhoneRegion: config.DEFAULT_PHONE_REGION,
        smsProvider: providers.sms.name,
        pushProvider: providers.push.name,
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
          void dispatcher.dispatchPushesNow();
        },
      }),
    );
  },
  { name: 'operations', dependencies: ['config', 'store', 'providers', 'dispatcher'] },
);

/** Retention: calls (with their deliveries) and audit entries older than RETENTION_DAYS go, at start and daily. */
export const retentionPlugin = fp(
  async (app) => {
    const { config, store } = app;
    const sweep = async () => {
      try {
        // One instance at a time (the others skip this round; the next is a day later).
        await store.exclusively('retention', async () => {
          const before = Date.now() - config.RETENTION_DAYS * 86_400_000;
          const removed = await store.calls.deleteOlderThan(before);
          if (removed > 0) app.log.info({ removed, days: config.RETENTION_DAYS }, 'old calls removed');
          // The audit log is kept as long as the calls (docs/security.md).
          const audited = await store.audit.deleteOlderThan(before);
          if (audited > 0)
            app.log.info({ removed: audited, days: config.RETENTION_DAYS }, 'old audit entries removed');
          // Limit slots no window can still see (the longest limit window is far below a day).
          await store.limits.sweep(Date.now() - 86_400_000);
        });
      } catch (err) {
        app.log.error({ err }, 'retention sweep failed');
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
  { name: 'retention', dependencies: ['config', 'store'] },
);
