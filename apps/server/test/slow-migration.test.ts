/**
 * A start whose migrations take long (an upgrade over a large history builds indexes for minutes)
 * must not fail for it: the server starts and listens, refuses calls with 503 and says why on
 * /readyz, and serves once the migrations are done. Here a transaction holding `calls` keeps
 * migration 0020 waiting. Needs TEST_DATABASE_URL (skipped without it).
 */
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { OUTBOX_TABLES } from '../src/outbox/index.js';
import type { Database } from '../src/store/index.js';
import { migrationProvider } from '../src/store/migrations.js';
import { startTestApp, type TestApp, waitUntil } from './helpers.js';
import { freshPostgres, TEST_DATABASE_URL } from './pg.js';

describe.skipIf(!TEST_DATABASE_URL)('a start whose migrations take long', () => {
  it('listens and refuses calls with 503 meanwhile, then serves once they are done', async () => {
    const fresh = await freshPostgres();
    const raw = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: fresh.url, max: 1 }) }),
    });
    const holder = new pg.Client({ connectionString: fresh.url });
    let t: TestApp | undefined;
    try {
      const before = await new Migrator({
        db: raw,
        provider: migrationProvider('postgres', [OUTBOX_TABLES]),
      }).migrateTo('0019_delivery_rollups');
      expect(before.error).toBeUndefined();
      await raw.destroy();
      // A long read of the calls: the next migration's ALTER TABLE waits for it.
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT count(*) FROM calls');

      t = await startTestApp({ DATABASE_URL: fresh.url });
      const readyz = await t.app.inject({ method: 'GET', url: '/readyz' });
      expect(readyz.statusCode).toBe(503);
      expect(readyz.json()).toMatchObject({
        database: false,
        migrations: false,
        reasons: [expect.stringContaining('the database is being migrated')],
      });
      const refused = await t.app.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456',
      });
      expect(refused.statusCode).toBe(503);

      await holder.query('COMMIT');
      const app = t;
      await waitUntil(
        async () => (await app.app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200,
        {
          what: 'the server ready once migrated',
          timeoutMs: 15_000,
        },
      );
      const served = await t.app.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456',
      });
      expect(served.statusCode).toBe(200);
      const [call] = await t.app.history.list({ limit: 1 });
      expect(call?.phone).toBe('+447911123456');
    } finally {
      await t?.close();
      await holder.end().catch(() => {});
      await fresh.drop();
    }
  }, 40_000);
});
