/**
 * Instances started at the same moment on one PostgreSQL database, as a scheduler starts every
 * replica of a first rollout or of an upgrade with a new migration: none exits, each becomes
 * ready and takes calls, and the one-time start work (migrations, partitions, the first admin) is
 * done once. Real processes (dist/server.js, built by the global setup), each round on a
 * database of its own. Needs TEST_DATABASE_URL (skipped without it).
 */
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { OUTBOX_TABLES } from '../src/outbox/index.js';
import { openDatabase } from '../src/store/db.js';
import { createPartitions, type Database, periodStart } from '../src/store/index.js';
import { migrationProvider } from '../src/store/migrations.js';
import { partitionName } from '../src/store/partitions.js';
import { START_LOCK_KEY } from '../src/store/start-lock.js';
import { TEST_CODE_KEY, tempDataDir, waitUntil } from './helpers.js';
import { freshPostgres, TEST_DATABASE_URL } from './pg.js';
import { authCodeOverGet, startServerProcess, testPhone } from './server-process.js';

const INSTANCES = 3;

const env = (url: string) => ({ DATABASE_URL: url, CODE_ENCRYPTION_KEY: TEST_CODE_KEY });

/** Runs `check` on a connection of its own to `url`. */
async function onDatabase<T>(url: string, check: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await check(client);
  } finally {
    await client.end();
  }
}

const countOf = async (client: pg.Client, query: string, params: unknown[] = []) =>
  Number((await client.query<{ n: string }>(query, params)).rows[0]?.n);

/**
 * Starts INSTANCES processes at once on `url` and checks what a deployment would: every one
 * ready (a start that exited fails here with its output), still running, and answering an
 * AuthCode that is recorded. With `heldBy`, a session holding the start lock (another instance's
 * long migration): each first listens, refusing with 503 and saying why, until it is let go.
 * Stops them.
 */
async function startTogether(url: string, round: number, heldBy?: pg.Client): Promise<void> {
  const started = await Promise.allSettled(
    Array.from({ length: INSTANCES }, () =>
      startServerProcess(env(url), { until: heldBy ? 'listening' : 'ready', timeoutMs: 40_000 }),
    ),
  );
  const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  try {
    const failures = started.flatMap((s) => (s.status === 'rejected' ? [String(s.reason)] : []));
    expect(failures).toEqual([]);
    const phones = servers.map((_, i) => testPhone(round * 10 + i));
    if (heldBy) {
      for (const s of servers) {
        const waiting = await fetch(`${s.url}/readyz`);
        expect(waiting.status).toBe(503);
        expect(await waiting.json()).toMatchObject({
          migrations: false,
          reasons: ["database: waiting for another instance's migrations"],
        });
        expect(await authCodeOverGet(s.url, testPhone(99), '4821')).toBe(503);
      }
      await heldBy.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [START_LOCK_KEY]);
      await waitUntil(
        async () => (await Promise.all(servers.map((s) => fetch(`${s.url}/readyz`)))).every((r) => r.ok),
        { what: 'every instance ready once the start lock is let go', timeoutMs: 30_000, intervalMs: 100 },
      );
    }
    const answers = await Promise.all(
      servers.map((s, i) => authCodeOverGet(s.url, phones[i] as string, '4821')),
    );
    expect(answers).toEqual(servers.map(() => 200));
    for (const s of servers) {
      expect(s.child.exitCode).toBeNull();
      expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    }
    await onDatabase(url, async (client) => {
      await waitUntil(
        async () =>
          (await countOf(client, 'SELECT count(*) AS n FROM calls WHERE phone = ANY($1)', [phones])) ===
          INSTANCES,
        { what: 'each instance’s call recorded', timeoutMs: 10_000, intervalMs: 100 },
      );
      // ADMIN_USERNAME made the first admin once, not once per instance.
      expect(await countOf(client, 'SELECT count(*) AS n FROM users')).toBe(1);
    });
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

describe.skipIf(!TEST_DATABASE_URL)('instances started together on PostgreSQL', () => {
  it('on a new database: every one stays up, becomes ready and takes calls, round after round', async () => {
    for (let round = 0; round < 2; round++) {
      const fresh = await freshPostgres();
      try {
        await startTogether(fresh.url, round);
      } finally {
        await fresh.drop();
      }
    }
  }, 120_000);

  it('while another instance holds the start: each listens, /readyz 503 saying so, then each is ready', async () => {
    const fresh = await freshPostgres();
    const other = new pg.Client({ connectionString: fresh.url });
    try {
      await other.connect();
      await other.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [START_LOCK_KEY]);
      await startTogether(fresh.url, 2, other);
    } finally {
      await other.end().catch(() => {});
      await fresh.drop();
    }
  }, 60_000);

  it('on the previous release’s schema: the pending migration is applied once, and every one comes up', async () => {
    const fresh = await freshPostgres();
    try {
      const names = Object.keys(await migrationProvider('postgres', [OUTBOX_TABLES]).getMigrations()).sort();
      // The previous release's migrations, and no partition of this month yet: a database last
      // served a while ago (restored from a backup, or a release before partitions, 0018). Kysely's
      // migrator runs the pending migration under its own lock; the partitions made after it were
      // not, and collided as the migrator's own tables do on a new database.
      const raw = new Kysely<Database>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: fresh.url, max: 1 }) }),
      });
      try {
        const before = await new Migrator({
          db: raw,
          provider: migrationProvider('postgres', [OUTBOX_TABLES]),
        }).migrateTo(names.at(-2) as string);
        expect(before.error).toBeUndefined();
      } finally {
        await raw.destroy();
      }

      await startTogether(fresh.url, 5);

      await onDatabase(fresh.url, async (client) => {
        const applied = await client.query<{ name: string }>(
          'SELECT name FROM kysely_migration ORDER BY name',
        );
        expect(applied.rows.map((r) => r.name)).toEqual(names);
        // This month's partition, made once by the instance that held the start.
        const month = partitionName('calls', periodStart(Date.now(), 'month'));
        expect(await countOf(client, 'SELECT count(*) AS n FROM pg_class WHERE relname = $1', [month])).toBe(
          1,
        );
      });
    } finally {
      await fresh.drop();
    }
  }, 60_000);

  it('makes the partitions once when several make them at once (a start and running instances’ hourly job)', async () => {
    const fresh = await freshPostgres();
    const data = tempDataDir();
    const makers: Kysely<Database>[] = [];
    try {
      const opened = await openDatabase({
        dataDir: data.dir,
        synchronous: 'NORMAL',
        databaseUrl: fresh.url,
        owners: [OUTBOX_TABLES],
      });
      await opened.ready;
      await opened.db.destroy();
      for (let i = 0; i < INSTANCES; i++) {
        makers.push(
          new Kysely<Database>({
            dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: fresh.url, max: 2 }) }),
          }),
        );
      }
      // The database as migrated, before any period's partition: three make the same days at once.
      const made = await Promise.all(
        makers.map((db) => createPartitions(db, 'day', [OUTBOX_TABLES]).ensureAhead(Date.now())),
      );
      const names = made.flat();
      expect(names.length).toBeGreaterThan(0);
      expect(new Set(names).size).toBe(names.length);
      const day = partitionName('calls', periodStart(Date.now() + 86_400_000, 'day'));
      expect(names.filter((n) => n === day)).toEqual([day]);
    } finally {
      for (const db of makers) await db.destroy();
      await fresh.drop();
      data.remove();
    }
  }, 30_000);
});
