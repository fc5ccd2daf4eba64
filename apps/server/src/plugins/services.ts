import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { createAuthCodeLimits } from '../limits/authcode.js';
import { createOperationRunner, type OperationRunner } from '../operations/run.js';
import { createOutbox, type Outbox } from '../outbox/index.js';
import { createPushProvider, createSmsFallbackProvider, createSmsProvider } from '../providers/index.js';
import type { PushProvider, SmsProvider } from '../providers/types.js';
import { loadSealer, type Sealer } from '../secrets/sealer.js';
import { openStore, type Store } from '../store/index.js';
import { instrumentProvider } from './metrics.js';

/**
 * The server's shared services, one named plugin each, decorated on the root instance and
 * declaring what they need: config → secrets, providers → outbox → store → dispatcher → operations;
 * retention. Closing runs in reverse (the dispatcher's attempts finish before the store closes).
 */

declare module 'fastify' {
  interface FastifyInstance {
    /** The validated configuration. */
    config: Config;
    /** The database and its repositories. */
    store: Store;
    /** The SMS and push providers deliveries go through. */
    providers: {
      readonly sms: SmsProvider;
      /** SMS_FALLBACK_PROVIDER's, when set. */
      readonly smsFallback: SmsProvider | undefined;
      readonly push: PushProvider;
    };
    /** The deliveries, from their call's commit to the provider (outbox/). */
    outbox: Outbox;
    /** The operation code every door (the .asmx bindings, the console) calls. */
    operations: OperationRunner;
    /**
     * Seals what is kept but must not be readable in the database or a backup of it: auth codes
     * waiting to be sent, second-factor secrets, the single sign-on's flow cookie.
     */
    sealer: Sealer;
  }
}

export const configPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    app.decorate('config', config);
  },
  { name: 'config' },
);

/** The sealing key: CODE_ENCRYPTION_KEY, or the key file in DATA_DIR (secrets/sealer.ts). */
export const secretsPlugin = fp(
  async (app) => {
    const { config } = app;
    app.decorate('sealer', loadSealer({ key: config.CODE_ENCRYPTION_KEY, dataDir: config.dataDir }));
  },
  { name: 'secrets', dependencies: ['config'] },
);

/** The providers, each send timed (school_provider_request_duration_seconds). */
export const providersPlugin = fp(
  async (app) => {
    const { config, metrics } = app;
    const providerLog = { logger: app.log.child({ component: 'provider' }) };
    const sms = createSmsProvider(config, providerLog);
    const smsFallback = createSmsFallbackProvider(config);
    app.decorate('providers', {
      sms: instrumentProvider('sms', sms, metrics, sms.name),
      smsFallback:
        smsFallback && instrumentProvider('sms', smsFallback, metrics, `${smsFallback.name}-fallback`),
      push: instrumentProvider('push', createPushProvider(config, providerLog), metrics),
    });
  },
  { name: 'providers', dependencies: ['config', 'metrics'] },
);

/**
 * The outbox: made before the store (whose call recorder runs its step in each commit), started by
 * the dispatcher plugin once the store is open.
 */
export const outboxPlugin = fp(
  async (app) => {
    const { config, providers } = app;
    const outbox = createOutbox({
      sms: providers.sms,
      smsFallback: providers.smsFallback,
      push: providers.push,
      limits: {
        sms: {
          concurrency: config.SMS_CONCURRENCY ?? config.DISPATCH_CONCURRENCY ?? 200,
          perSecond: config.SMS_RATE_LIMIT,
        },
        push: {
          concurrency: config.PUSH_CONCURRENCY ?? config.DISPATCH_CONCURRENCY ?? 32,
          perSecond: config.PUSH_RATE_LIMIT,
        },
      },
      sealer: app.sealer,
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      retryBaseMs: config.DELIVERY_RETRY_BASE_MS,
      retryMaxMs: config.DELIVERY_RETRY_MAX_MS,
      pollMs: config.DISPATCH_POLL_MS,
      // Longer than any attempt can take (each is bounded by the provider timeout).
      leaseMs: config.PROVIDER_TIMEOUT_MS * 3 + 5000,
      log: app.log.child({ component: 'outbox' }),
    });
    app.decorate('outbox', outbox);
    app.metrics.watchCircuits(() => outbox.circuits());
  },
  { name: 'outbox', dependencies: ['config', 'providers', 'metrics', 'secrets'] },
);

/**
 * The database; what is pending is committed and it is closed with the server. PostgreSQL that
 * cannot be reached at start does not stop the server: it starts, answers 503, and connects when
 * it can (docs/monitoring.md#faults).
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
      intake: app.outbox.intake,
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
    app.addHook('onClose', async () => {
      await store.close();
    });
  },
  { name: 'store', dependencies: ['config', 'disk-space', 'outbox'] },
);

/** The outbox's dispatcher: started once the server is ready, its attempts finished before the store closes. */
export const dispatcherPlugin = fp(
  async (app) => {
    const { outbox, store } = app;
    app.addHook('onReady', async () => {
      outbox.start(store);
    });
    // Attempts under way finish before the database closes; what is left is picked up next start.
    app.addHook('onClose', async () => {
      await outbox.stop();
    });
  },
  { name: 'dispatcher', dependencies: ['store', 'outbox'] },
);

/** The operation runner with its handlers and AuthCode's limits. */
export const operationsPlugin = fp(
  async (app) => {
    const { config, store, providers, outbox } = app;
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
          void outbox.dispatchPushesNow();
        },
      }),
    );
  },
  { name: 'operations', dependencies: ['config', 'store', 'providers', 'dispatcher'] },
);

/**
 * The Dashboard's roll-ups (store/call-rollups.ts): the hours that ended are rolled up at start
 * (a long history in the background, a step at a time) and then every minute, by one instance at
 * a time.
 */
export const rollupPlugin = fp(
  async (app) => {
    const { store } = app;
    let running: Promise<void> | undefined;
    let closing = false;
    const roll = () => {
      // A second at a time: a long history is caught up in turns, and a stop does not wait.
      let more = false;
      running ??= store
        .exclusively('call-rollups', async () => {
          more = (await store.rollups.rollUp(Date.now(), { budgetMs: 1000 })) > 0;
        })
        .then(
          () => {},
          (err: unknown) => app.log.error({ err }, 'rolling up calls failed'),
        )
        .finally(() => {
          running = undefined;
          // Once this turn has let go of its lock (PostgreSQL), the next.
          if (more && !closing) setImmediate(() => void roll());
        });
      return running;
    };
    let timer: NodeJS.Timeout | undefined;
    app.addHook('onReady', async () => {
      void store.whenReady(roll, () => {});
      timer = setInterval(roll, ROLLUP_EVERY_MS);
      timer.unref();
    });
    app.addHook('onClose', async () => {
      closing = true;
      if (timer) clearInterval(timer);
      await running;
    });
  },
  { name: 'rollups', dependencies: ['store'] },
);

const ROLLUP_EVERY_MS = 60_000;

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
          await store.rollups.deleteOlderThan(before);
          if (removed > 0) app.log.info({ removed, days: config.RETENTION_DAYS }, 'old calls removed');
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
