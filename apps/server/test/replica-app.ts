import pg from 'pg';
import type { BuildOptions } from '../src/app.js';
import { startTestApp, type TestApp } from './helpers.js';
import { type PrivatePostgres, startPrivatePostgres, startPrivateReplica } from './private-postgres.js';

/**
 * The server on a private PostgreSQL primary, reading from a real streaming replica of it
 * (DATABASE_READ_URL): a `pg_basebackup -R` standby on a port of its own. The set-up of the tests
 * of reads from a replica (read-replica.test.ts, privacy-replica.test.ts); where the machine
 * cannot run them, `privateReplicaAvailable()` says why.
 */
export interface ReplicaApp {
  readonly primary: PrivatePostgres;
  readonly replica: PrivatePostgres;
  readonly t: TestApp;
  /** Runs `text` on the replica, on a connection of its own (`SELECT pg_wal_replay_pause()`). */
  onReplica(text: string): Promise<void>;
  /** Closes the server, then the replica and the primary. */
  close(): Promise<void>;
}

/**
 * Starts the primary, its replica and the server reading from it, with `env` besides the two URLs
 * (DATABASE_READ_MAX_LAG, …). Whatever had started is stopped again if a later step fails.
 */
export async function startAppWithReplica(
  env: Record<string, string>,
  logger?: BuildOptions['logger'],
): Promise<ReplicaApp> {
  const primary = await startPrivatePostgres({ replication: true });
  let replica: PrivatePostgres | undefined;
  try {
    replica = await startPrivateReplica(primary);
    const t = await startTestApp(
      { DATABASE_URL: primary.url, DATABASE_READ_URL: replica.url, ...env },
      undefined,
      logger,
    );
    const standby = replica;
    return {
      primary,
      replica: standby,
      t,
      async onReplica(text) {
        const client = new pg.Client({ connectionString: standby.url });
        await client.connect();
        try {
          await client.query(text);
        } finally {
          await client.end();
        }
      },
      async close() {
        await t.close();
        await standby.destroy();
        await primary.destroy();
      },
    };
  } catch (error) {
    await replica?.destroy();
    await primary.destroy();
    throw error;
  }
}
