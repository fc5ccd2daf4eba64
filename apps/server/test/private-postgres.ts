import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './server-process.js';

/**
 * A PostgreSQL cluster of the test's own, for outage tests that really stop and start the server
 * (the shared TEST_DATABASE_URL server must never be stopped): `initdb` into a temporary folder,
 * a port of its own on 127.0.0.1 (the same after a restart), trust auth, the unix socket inside
 * the folder, fsync off. Needs the PostgreSQL server binaries: `privatePostgresAvailable()` says
 * whether they are here, so that a suite can skip on a plain machine. initdb and postgres refuse
 * to run as root: as root, the folder belongs to the `postgres` user and they run as it.
 */

export interface PrivatePostgres {
  /** postgres:// URL of the cluster's `test` database (user postgres, no password). */
  readonly url: string;
  readonly port: number;
  /** The temporary folder: data/, postgres.log and the unix socket. */
  readonly dir: string;
  readonly running: boolean;
  /** Stops the server and waits until it is gone: `fast` rolls sessions back, `immediate` is a crash. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again, on the same port with the same data, and waits until it accepts connections. */
  start(): Promise<void>;
  /** Freezes every process of the server (SIGSTOP): connections stay open and nothing answers. */
  freeze(): Promise<void>;
  /** Lets a frozen server go on (SIGCONT). */
  thaw(): Promise<void>;
  /** Stops it and removes the folder. */
  destroy(): Promise<void>;
  /** The server's log so far, for a failing test's message. */
  log(): string;
}

type Availability = { ok: true } | { ok: false; why: string };

interface Tools {
  /** The folder of initdb, pg_ctl and pg_basebackup. */
  readonly bin: string;
  /** As root: the postgres user's ids and runuser, to run the binaries as it. */
  readonly asUser?: { uid: number; gid: number; runuser: string };
}

let tools: Tools | string | undefined;

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The binaries: $PG_BIN, else the newest of Debian's /usr/lib/postgresql/<n>/bin, else PATH. */
function findTools(): Tools | string {
  if (process.platform === 'win32') return 'not supported on Windows';
  const dirs: string[] = [];
  if (process.env.PG_BIN) dirs.push(process.env.PG_BIN);
  try {
    const versions = fs.readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v));
    versions.sort((a, b) => Number(b) - Number(a));
    dirs.push(...versions.map((v) => `/usr/lib/postgresql/${v}/bin`));
  } catch {}
  dirs.push(...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean));
  const bin = dirs.find((d) => executable(path.join(d, 'initdb')) && executable(path.join(d, 'pg_ctl')));
  if (!bin)
    return 'no PostgreSQL server binaries (initdb, pg_ctl) in $PG_BIN, /usr/lib/postgresql/*/bin or PATH';
  if (process.getuid?.() !== 0) return { bin };
  const id = (flag: string) => {
    const r = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
    return r.status === 0 ? Number(r.stdout.trim()) : undefined;
  };
  const uid = id('-u');
  const gid = id('-g');
  if (uid === undefined || gid === undefined)
    return 'running as root, and there is no postgres user to run initdb and postgres as';
  const runuser = ['/usr/sbin/runuser', '/sbin/runuser', ...dirs.map((d) => path.join(d, 'runuser'))].find(
    executable,
  );
  if (!runuser) return 'running as root, and there is no runuser to run initdb and postgres as postgres';
  return { bin, asUser: { uid, gid, runuser } };
}

/** Whether `startPrivatePostgres()` can work here, and if not why (for the skipped suite's name). */
export function privatePostgresAvailable(): Availability {
  tools ??= findTools();
  return typeof tools === 'string' ? { ok: false, why: tools } : { ok: true };
}

/** Whether `startPrivateReplica()` can work here too (pg_basebackup beside initdb), and if not why. */
export function privateReplicaAvailable(): Availability {
  const cluster = privatePostgresAvailable();
  if (!cluster.ok) return cluster;
  const { bin } = tools as Tools;
  return executable(path.join(bin, 'pg_basebackup'))
    ? { ok: true }
    : { ok: false, why: `no pg_basebackup beside initdb in ${bin}` };
}

/** Clusters not destroyed yet: stopped if the test process exits without destroying them. */
const live = new Map<string, () => void>();
let exitHook = false;

/**
 * A private cluster: `initdb`, then created database `database` (`test`). With `replication`, it
 * says outright what a primary of `startPrivateReplica` needs (initdb's defaults have it already:
 * wal_level replica, WAL senders, replication connections trusted from 127.0.0.1).
 */
export async function startPrivatePostgres(
  options: { database?: string; replication?: boolean } = {},
): Promise<PrivatePostgres> {
  const database = options.database ?? 'test';
  return privateCluster(database, async ({ run, data }) => {
    await run('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '-A',
      'trust',
      '-E',
      'UTF8',
      // As the CI's server (pg-search folds case in the C collation either way).
      '--locale=C.UTF-8',
      '--no-sync',
      '--no-instructions',
    ]);
    if (options.replication) {
      fs.appendFileSync(
        path.join(data, 'postgresql.conf'),
        ['', 'wal_level = replica', 'max_wal_senders = 4', "wal_keep_size = '128MB'", ''].join('\n'),
      );
      fs.appendFileSync(path.join(data, 'pg_hba.conf'), '\nhost replication postgres 127.0.0.1/32 trust\n');
    }
    return { createDatabase: true };
  });
}

/**
 * A streaming replica of `primary` (started with `replication`), as an operator makes one:
 * `pg_basebackup -R` into a folder of its own (standby.signal and primary_conninfo written), on a
 * port of its own, a hot standby that answers reads. Its `url` names the same database.
 */
export async function startPrivateReplica(primary: PrivatePostgres): Promise<PrivatePostgres> {
  const database = new URL(primary.url).pathname.slice(1);
  return privateCluster(database, async ({ run, data }) => {
    await run('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      data,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
    return { createDatabase: false };
  });
}

interface Setup {
  /** Runs one of the PostgreSQL binaries (as the postgres user when root). */
  run(tool: string, args: string[]): Promise<void>;
  /** The data folder to make. */
  readonly data: string;
}

async function privateCluster(
  database: string,
  make: (setup: Setup) => Promise<{ createDatabase: boolean }>,
): Promise<PrivatePostgres> {
  const available = privatePostgresAvailable();
  if (!available.ok) throw new Error(`no private PostgreSQL: ${available.why}`);
  const { bin, asUser } = tools as Tools;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-messaging-pg-'));
  if (asUser) fs.chownSync(dir, asUser.uid, asUser.gid);
  const data = path.join(dir, 'data');
  const logFile = path.join(dir, 'postgres.log');
  // PG* variables of the test's environment (PGDATA, PGPORT…) must not steer the cluster.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PG')));

  const command = (tool: string, args: string[]): [string, string[]] => {
    const file = path.join(bin, tool);
    return asUser ? [asUser.runuser, ['-u', 'postgres', '--', file, ...args]] : [file, args];
  };
  // Asynchronous: a fault proxy in this same process must keep forwarding meanwhile.
  const run = (tool: string, args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const [file, argv] = command(tool, args);
      execFile(file, argv, { cwd: dir, env, timeout: 60_000 }, (err, stdout, stderr) => {
        if (!err) return resolve();
        let log = '';
        try {
          log = fs.readFileSync(logFile, 'utf8').slice(-4000);
        } catch {}
        reject(new Error(`${tool} ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}\n${log}`));
      });
    });
  const pgCtl = (...args: string[]) => run('pg_ctl', ['-D', data, '-w', '-t', '30', ...args]);

  let running = false;
  /** The processes a freeze stopped. */
  let frozen: number[] = [];
  const remove = () => {
    live.delete(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  live.set(dir, () => {
    const [file, argv] = command('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    if (running) spawnSync(file, argv, { cwd: dir, env, stdio: 'ignore' });
    remove();
  });
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const cleanUp of [...live.values()]) cleanUp();
    });
  }

  try {
    const port = await freePort();
    const { createDatabase } = await make({ run, data });
    // After what the primary's copy says (a replica's pg_basebackup brings the primary's settings).
    fs.appendFileSync(
      path.join(data, 'postgresql.conf'),
      [
        '',
        "listen_addresses = '127.0.0.1'",
        `port = ${port}`,
        `unix_socket_directories = '${dir}'`,
        // Nothing here has to survive a crash of the machine.
        'fsync = off',
        'synchronous_commit = off',
        'full_page_writes = off',
        '',
      ].join('\n'),
    );
    const start = async () => {
      await pgCtl('-l', logFile, 'start');
      running = true;
    };
    await start();
    if (createDatabase) {
      const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${database}`);
      } finally {
        await admin.end();
      }
    }
    return {
      url: `postgres://postgres@127.0.0.1:${port}/${database}`,
      port,
      dir,
      get running() {
        return running;
      },
      async stop(mode = 'fast') {
        if (!running) return;
        await pgCtl('-m', mode, 'stop');
        running = false;
      },
      async start() {
        if (!running) await start();
      },
      async freeze() {
        frozen = serverProcesses(data);
        for (const pid of frozen) process.kill(pid, 'SIGSTOP');
      },
      async thaw() {
        for (const pid of frozen) process.kill(pid, 'SIGCONT');
        frozen = [];
      },
      async destroy() {
        if (frozen.length > 0) for (const pid of frozen) process.kill(pid, 'SIGCONT');
        try {
          // The data goes anyway: no need for a clean shutdown.
          if (running) await pgCtl('-m', 'immediate', 'stop');
          running = false;
        } finally {
          remove();
        }
      },
      log() {
        try {
          return fs.readFileSync(logFile, 'utf8');
        } catch {
          return '';
        }
      },
    };
  } catch (err) {
    live.get(dir)?.();
    throw err;
  }
}

/** The postmaster of the cluster in `data` (its postmaster.pid) and every process it started. */
function serverProcesses(data: string): number[] {
  const postmaster = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        // After the command (in parentheses, which may hold spaces): state, then the parent's pid.
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [postmaster, ...children];
}
