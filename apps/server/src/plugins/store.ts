import fp from 'fastify-plugin';
import { OUTBOX_TABLES } from '../outbox/index.js';
import { openStore, type Store } from '../store/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The database: connection, transactions, availability, and the repositories kept in it. */
    store: Store;
  }
}

/**
 * The database, closed with the server after everything that writes to it (plugins close in the
 * reverse of their order). PostgreSQL that
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
      // The outbox's tables: made by its migrations, partitioned with the calls (outbox/migrations.ts).
      owners: [OUTBOX_TABLES],
      databaseUrl: config.DATABASE_URL,
      poolSize: config.DATABASE_POOL_SIZE,
      readUrl: config.DATABASE_READ_URL,
      readMaxLagMs: config.DATABASE_READ_MAX_LAG,
      partitionPeriod: config.PARTITION_PERIOD,
      log,
      onWarning: (message, err) => log.warn({ err }, message),
      onDiskFull: () => app.diskSpace.writeFoundFull(),
    });
    app.log.info(
      {
        database: store.dialect,
        instance: store.instance,
        up: store.availability.status().up,
        readReplica: store.replica !== undefined,
      },
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
  { name: 'store', dependencies: ['config', 'disk-space'] },
);
