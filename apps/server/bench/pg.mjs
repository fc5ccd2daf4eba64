// The PostgreSQL side of the benches: a fresh database for each measurement, created through an
// admin connection (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test) and
// dropped at the end. Without a reachable server the benches print why and keep to SQLite.
import crypto from 'node:crypto';
import pg from 'pg';

export const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The admin URL without its password, for messages. */
export const shownAdminUrl = (() => {
  const url = new URL(adminUrl);
  if (url.password) url.password = '***';
  return url.href;
})();

/**
 * Connects as the admin; answers the client, or the reason PostgreSQL cannot be used (unreachable,
 * refused, or not allowed to create databases).
 */
export async function connectAdmin() {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    const { rows } = await client.query(
      'SELECT rolcreatedb OR rolsuper AS may FROM pg_roles WHERE rolname = current_user',
    );
    if (!rows[0]?.may) throw new Error(`the role in ${shownAdminUrl} may not create databases`);
    return { client };
  } catch (err) {
    await client.end().catch(() => {});
    return { reason: `${shownAdminUrl}: ${describe(err)}` };
  }
}

/** An error in a line; a refused connection to localhost is an AggregateError with no message. */
function describe(err) {
  if (!(err instanceof Error)) return String(err);
  if (err.message) return err.message;
  if (err instanceof AggregateError) return [...new Set(err.errors.map(describe))].join('; ');
  return err.code ?? err.name;
}

/** Creates `bench_<random>`; answers its name and URL, and `drop()` (WITH (FORCE): idle pools go too). */
export async function createDatabase(admin) {
  const name = `bench_${crypto.randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.href,
    drop: () => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * The database `name`, created if missing and never dropped (`drop()` does nothing): the history
 * bench keeps a seeded one between runs. `empty()` drops and creates it again, before a new seed.
 */
export async function keptDatabase(admin, name) {
  const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  if (rowCount === 0) await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.href,
    drop: async () => {},
    empty: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${name}`);
    },
  };
}
