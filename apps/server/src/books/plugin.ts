import path from 'node:path';
import fp from 'fastify-plugin';
import { type BookBlobs, createDbBlobs, createFileBlobs } from './blobs.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Where the books' bytes are kept: files with SQLite, the database with PostgreSQL. */
    bookBlobs: BookBlobs;
  }
}

/**
 * The books' bytes follow the database: with PostgreSQL they live in it, so instances behind one
 * load balancer share nothing but the database; with SQLite (one instance) they stay files.
 */
export const bookBlobsPlugin = fp(
  async (app) => {
    const { config, store } = app;
    app.decorate(
      'bookBlobs',
      store.dialect === 'postgres'
        ? createDbBlobs(store.db, path.join(config.dataDir, 'books', 'tmp'))
        : createFileBlobs(config.dataDir),
    );
  },
  { name: 'book-blobs', dependencies: ['config', 'store'] },
);
