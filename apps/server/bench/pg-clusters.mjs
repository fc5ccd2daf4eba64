// A PostgreSQL primary of the bench's own and a streaming replica of it, for bench/history.mjs's
// BENCH_REPLICA (the shared server is never stopped nor reconfigured): `initdb`, then
// `pg_basebackup -R` through a replication slot, each on a port of its own on 127.0.0.1, trust
// auth, the unix sockets in the folder. In `keptDir` (BENCH_PG_DIR) when given: made once, stopped
// at the end and started again on new ports by the next run, so that a seeded history is seeded
// once; else in a temporary folder removed at the end. As test/private-postgres.ts: the binaries
// of $PG_BIN or the newest /usr/lib/postgresql/<n>/bin; as root they run as the postgres user.
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './server-process.mjs';

/** The database the bench seeds, on the primary (and so on the replica). */
const DATABASE = 'bench';
/** The replica's slot: the primary keeps the WAL it has not streamed yet, however far behind. */
const SLOT = 'bench_replica';

const executable = (file) => {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
};

/** The server binaries' folder and, as root, the postgres user's ids to run them as. */
function findTools() {
  const dirs = [];
  if (process.env.PG_BIN) dirs.push(process.env.PG_BIN);
  try {
    const versions = fs.readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v));
    versions.sort((a, b) => Number(b) - Number(a));
    dirs.push(...versions.map((v) => `/usr/lib/postgresql/${v}/bin`));
  } catch {}
  dirs.push(...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean));
  const bin = dirs.find((d) =>
    ['initdb', 'pg_ctl', 'pg_basebackup'].every((t) => executable(path.join(d, t))),
  );
  if (!bin)
    throw new Error('no initdb, pg_ctl and pg_basebackup in $PG_BIN, /usr/lib/postgresql/*/bin or PATH');
  if (process.getuid?.() !== 0) return { bin };
  const id = (flag) => {
    const r = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
    if (r.status !== 0)
      throw new Error('running as root, and there is no postgres user to run PostgreSQL as');
    return Number(r.stdout.trim());
  };
  const runuser = ['/usr/sbin/runuser', '/sbin/runuser'].find(executable);
  if (!runuser) throw new Error('running as root, and there is no runuser to run PostgreSQL as postgres');
  return { bin, asUser: { uid: id('-u'), gid: id('-g'), runuser } };
}

/** Settings of both clusters (a replica's copy of postgresql.conf brings them). */
const SETTINGS = [
  // Rewritten before each start: the ports are new each run.
  "include_if_exists = 'bench.conf'",
  'wal_level = replica',
  'max_wal_senders = 4',
  'max_replication_slots = 4',
  // Nothing here has to survive a crash of the machine.
  'fsync = off',
  'synchronous_commit = off',
  'full_page_writes = off',
  // Seeding millions of rows: fewer checkpoints, and room for VACUUM.
  "max_wal_size = '4GB'",
  "checkpoint_timeout = '15min'",
  "maintenance_work_mem = '256MB'",
  // A long read on the replica is not cancelled by the primary's cleanup.
  'hot_standby_feedback = on',
];

/**
 * Starts (making them first when they are not there) a primary and its replica. Answers both, as
 * `{ url (of DATABASE), adminUrl, port, dir, log() }`, `database` (its name and URL, and `empty()`,
 * which drops and creates it again on the primary), `caughtUp()` and `close()`.
 */
export async function startClusters(keptDir) {
  const { bin, asUser } = findTools();
  const dir = keptDir ? path.resolve(keptDir) : fs.mkdtempSync(path.join(os.tmpdir(), 'school-history-pg-'));
  fs.mkdirSync(dir, { recursive: true });
  const own = (file) => {
    if (asUser) fs.chownSync(file, asUser.uid, asUser.gid);
  };
  own(dir);
  // PG* variables of the bench's environment (PGDATA, PGPORT…) must not steer the clusters.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PG')));
  const command = (tool, args) => {
    const file = path.join(bin, tool);
    return asUser ? [asUser.runuser, ['-u', 'postgres', '--', file, ...args]] : [file, args];
  };
  const run = (tool, args) =>
    new Promise((resolve, reject) => {
      const [file, argv] = command(tool, args);
      execFile(file, argv, { cwd: dir, env }, (err, stdout, stderr) => {
        if (err) reject(new Error(`${tool} ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`));
        else resolve(stdout);
      });
    });

  const node = (name) => {
    const data = path.join(dir, name);
    const logFile = path.join(dir, `${name}.log`);
    let port;
    let running = false;
    return {
      name,
      data,
      get running() {
        return running;
      },
      get port() {
        return port;
      },
      get url() {
        return `postgres://postgres@127.0.0.1:${port}/${DATABASE}`;
      },
      get adminUrl() {
        return `postgres://postgres@127.0.0.1:${port}/postgres`;
      },
      made: () => fs.existsSync(path.join(data, 'PG_VERSION')),
      async start(primaryPort) {
        // One left running by a run that was killed: stopped first, its port is not ours.
        if (fs.existsSync(path.join(data, 'postmaster.pid')))
          await run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']).catch(() => {});
        port = await freePort();
        const conf = path.join(data, 'bench.conf');
        fs.writeFileSync(
          conf,
          [`listen_addresses = '127.0.0.1'`, `port = ${port}`, `unix_socket_directories = '${dir}'`, ''].join(
            '\n',
          ),
        );
        own(conf);
        if (primaryPort !== undefined) {
          // pg_basebackup -R wrote the primary's port of the day it was made.
          const auto = path.join(data, 'postgresql.auto.conf');
          const text = fs.readFileSync(auto, 'utf8');
          fs.writeFileSync(
            auto,
            text.replace(/^(primary_conninfo = '.*?)port=\d+/m, `$1port=${primaryPort}`),
          );
        }
        await run('pg_ctl', ['-D', data, '-l', logFile, '-w', '-t', '600', 'start']);
        running = true;
      },
      async stop(mode = 'fast') {
        if (!running) return;
        await run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '600', 'stop']);
        running = false;
      },
      stopNow() {
        if (!running) return;
        const [file, argv] = command('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        spawnSync(file, argv, { cwd: dir, env, stdio: 'ignore' });
        running = false;
      },
      log: () => {
        try {
          return fs.readFileSync(logFile, 'utf8');
        } catch {
          return '';
        }
      },
    };
  };
  const primary = node('primary');
  const replica = node('replica');

  /** One statement on a connection of its own; answers its first row. */
  async function one(url, text, values) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(text, values)).rows[0];
    } finally {
      await client.end();
    }
  }

  const onExit = () => {
    replica.stopNow();
    primary.stopNow();
    if (!keptDir) fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  try {
    if (!primary.made()) {
      await run('initdb', [
        '-D',
        primary.data,
        '-U',
        'postgres',
        '-A',
        'trust',
        '-E',
        'UTF8',
        '--locale=C.UTF-8',
        '--no-sync',
        '--no-instructions',
      ]);
      fs.appendFileSync(path.join(primary.data, 'postgresql.conf'), ['', ...SETTINGS, ''].join('\n'));
      fs.appendFileSync(
        path.join(primary.data, 'pg_hba.conf'),
        '\nhost replication postgres 127.0.0.1/32 trust\n',
      );
      await primary.start();
      await one(primary.adminUrl, `CREATE DATABASE ${DATABASE}`);
    } else {
      await primary.start();
    }
    if (!replica.made()) {
      // A slot left by a replica whose folder went would keep WAL for nobody.
      await one(
        primary.adminUrl,
        'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1',
        [SLOT],
      );
      fs.rmSync(replica.data, { recursive: true, force: true });
      await run('pg_basebackup', [
        '-h',
        '127.0.0.1',
        '-p',
        String(primary.port),
        '-U',
        'postgres',
        '-D',
        replica.data,
        '-R',
        '-C',
        '-S',
        SLOT,
        '-X',
        'stream',
        '-c',
        'fast',
        '--no-sync',
      ]);
    }
    await replica.start(primary.port);
  } catch (err) {
    process.removeListener('exit', onExit);
    onExit();
    throw err;
  }

  return {
    primary,
    replica,
    dir,
    database: {
      name: DATABASE,
      get url() {
        return primary.url;
      },
      async empty() {
        await one(primary.adminUrl, `DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
        await one(primary.adminUrl, `CREATE DATABASE ${DATABASE}`);
      },
    },
    /** Each cluster's folder's size (du), in bytes. */
    sizes() {
      const du = (folder) =>
        Number(spawnSync('du', ['-sb', folder], { encoding: 'utf8' }).stdout.split('\t')[0]);
      return { primary: du(primary.data), replica: du(replica.data) };
    },
    /**
     * Resolves once the replica has replayed the primary's WAL up to where it was when asked,
     * saying every `every` ms how far behind it is.
     */
    async caughtUp({ every = 10_000, say = console.log } = {}) {
      const started = performance.now();
      const { lsn } = await one(primary.adminUrl, 'SELECT pg_current_wal_lsn()::text AS lsn');
      let said = started;
      for (;;) {
        const { behind } = await one(
          replica.adminUrl,
          'SELECT pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())::bigint::text AS behind',
          [lsn],
        );
        if (Number(behind) <= 0) return (performance.now() - started) / 1000;
        if (performance.now() - said >= every) {
          said = performance.now();
          say(`  replica: ${(Number(behind) / 1e6).toFixed(0)} MB of WAL behind ${lsn}`);
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    /** Stops both (kept), or stops them at once and removes the folder. */
    async close() {
      process.removeListener('exit', onExit);
      if (keptDir) {
        await replica.stop();
        await primary.stop();
      } else {
        replica.stopNow();
        primary.stopNow();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
