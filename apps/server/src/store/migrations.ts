import type { Kysely, Migration, MigrationProvider } from 'kysely';

/**
 * Versioned migrations, in order; each runs once, recorded by Kysely's migrator. Never edit one
 * that has shipped: add the next. Written to run unchanged on SQLite and PostgreSQL.
 */
const migrations: Record<string, Migration> = {
  '0001_calls': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('calls')
        .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('group_name', 'text', (c) => c.notNull())
        .addColumn('operation', 'text')
        .addColumn('binding', 'text', (c) => c.notNull())
        .addColumn('caller_ip', 'text', (c) => c.notNull())
        .addColumn('user_agent', 'text')
        .addColumn('params', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('duration_ms', 'real', (c) => c.notNull())
        .addColumn('request', 'text', (c) => c.notNull())
        .addColumn('request_bytes', 'integer', (c) => c.notNull())
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('response_bytes', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('calls_at').on('calls').columns(['at', 'id']).execute();
      await db.schema.createIndex('calls_operation').on('calls').columns(['operation', 'id']).execute();
    },
  },
  '0002_call_filter_indexes': {
    // History lists newest first by (at, id) under one filter: each filter gets its index.
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('calls_operation').execute();
      for (const column of ['operation', 'binding', 'outcome', 'caller_ip']) {
        await db.schema.createIndex(`calls_${column}_at`).on('calls').columns([column, 'at', 'id']).execute();
      }
    },
  },
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
