import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startTestApp, type TestApp, tempDataDir } from './helpers.js';
import { openTestInstance, type TestInstance } from './instance.js';

/**
 * PostgreSQL for tests: `TEST_DATABASE_URL` names a server and a database to connect to (CI sets
 * it to the machine's PostgreSQL, `.ci/run`); unset, the PostgreSQL tests are skipped and the
 * SQLite ones still run. Each caller gets a database of its own, created fresh and dropped after.
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;

/** The dialects a suite runs on: always SQLite, PostgreSQL too when TEST_DATABASE_URL is set. */
export const DIALECTS: readonly ('sqlite' | 'postgres')[] = TEST_DATABASE_URL
  ? ['sqlite', 'postgres']
  : ['sqlite'];

export interface FreshDatabase {
  /** postgres:// URL of the new database. */
  readonly url: string;
  /** Drops it (connections still open to it are ended first). */
  drop(): Promise<void>;
}

/** Creates an empty database on TEST_DATABASE_URL's server, named uniquely for this run. */
export async function freshPostgres(): Promise<FreshDatabase> {
  if (!TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL is not set');
  const name = `sm_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await client.connect();
      try {
        // A pool just ended has let its clients go before their connections closed: wait (up to
        // 2 s) for them to close, or FORCE ends them with a FATAL error that reaches a client no
        // one listens to any more.
        for (let i = 0; i < 40; i++) {
          const { rows } = await client.query<{ n: string }>(
            'SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1',
            [name],
          );
          if (Number(rows[0]?.n) === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A test app on `dialect`: SQLite in a temporary folder, or PostgreSQL in a fresh database that
 * its close drops.
 */
export async function startTestAppOn(
  dialect: (typeof DIALECTS)[number],
  env: Record<string, string> = {},
): Promise<TestApp> {
  const fresh = dialect === 'postgres' ? await freshPostgres() : undefined;
  const t = await startTestApp(fresh ? { ...env, DATABASE_URL: fresh.url } : env);
  return {
    ...t,
    async close() {
      await t.close();
      await fresh?.drop();
    },
  };
}

/**
 * Instances a test opens itself on one database (each a store with its outbox, History and call
 * recorder: instance.ts): the first, and more on the same database.
 */
export interface TestStores extends Omit<TestInstance, 'close'> {
  /** Another instance on the same database (PostgreSQL only shares it). */
  another(): Promise<TestInstance>;
  /** Closes every store opened, and drops the database or removes the folder. */
  close(): Promise<void>;
}

/**
 * Opens an instance on `dialect` (SQLite in a temporary folder, or a fresh PostgreSQL database):
 * a store with the outbox (not sending), History and the call recorder on it (instance.ts).
 */
export async function openTestStoresOn(
  dialect: (typeof DIALECTS)[number],
  options: { poolSize?: number } = {},
): Promise<TestStores> {
  const cleanup: (() => Promise<void> | void)[] = [];
  const data = tempDataDir();
  cleanup.push(() => data.remove());
  const fresh = dialect === 'postgres' ? await freshPostgres() : undefined;
  if (fresh) cleanup.unshift(() => fresh.drop());
  const another = async () => {
    const instance = await openTestInstance({
      dataDir: data.dir,
      synchronous: 'NORMAL',
      databaseUrl: fresh?.url,
      poolSize: options.poolSize ?? 8,
    });
    cleanup.unshift(() => instance.close());
    return instance;
  };
  const first = await another();
  return {
    store: first.store,
    outbox: first.outbox,
    history: first.history,
    recorder: first.recorder,
    another,
    async close() {
      for (const step of cleanup) await step();
    },
  };
}
