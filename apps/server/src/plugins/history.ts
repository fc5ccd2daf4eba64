import fp from 'fastify-plugin';
import { createHistory, type History } from '../history/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The recorded calls as staff read them: lists, search, exports, the live tail (history/). */
    history: History;
  }
}

/** History; its search worker and the searches under way end with the server. */
export const historyPlugin = fp(
  async (app) => {
    const history = createHistory(app.store);
    app.decorate('history', history);
    app.addHook('onClose', async () => {
      await history.close();
    });
  },
  { name: 'history', dependencies: ['store'] },
);
