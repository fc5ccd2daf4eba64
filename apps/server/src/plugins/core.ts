import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { createOperationRunner, type OperationRunner } from '../operations/run.js';
import { openStore, type Store } from '../store/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The validated configuration. */
    config: Config;
    /** The database and its repositories. */
    store: Store;
    /** The operation code every door (the .asmx bindings, the console) calls. */
    operations: OperationRunner;
  }
}

/** Shared services, decorated on the root instance; the store is closed with the server. */
export const corePlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    const store = await openStore({ dataDir: config.dataDir, synchronous: config.SQLITE_SYNCHRONOUS });
    app.decorate('config', config);
    app.decorate('store', store);
    app.decorate('operations', createOperationRunner({ defaultPhoneRegion: config.DEFAULT_PHONE_REGION }));
    app.addHook('onClose', async () => {
      await store.close();
    });
  },
  { name: 'core' },
);
