import fp from 'fastify-plugin';
import { loadSealer, type Sealer } from '../secrets/sealer.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Seals what is kept but must not be readable in the database or a backup of it: auth codes
     * waiting to be sent, second-factor secrets, the single sign-on's flow cookie.
     */
    sealer: Sealer;
  }
}

/** The sealing key: CODE_ENCRYPTION_KEY, or the key file in DATA_DIR (secrets/sealer.ts). */
export const secretsPlugin = fp(
  async (app) => {
    const { config } = app;
    app.decorate('sealer', loadSealer({ key: config.CODE_ENCRYPTION_KEY, dataDir: config.dataDir }));
  },
  { name: 'secrets', dependencies: ['config'] },
);
