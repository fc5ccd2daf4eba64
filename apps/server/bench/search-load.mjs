// pnpm bench (search load): the .asmx GET binding's latency while staff loop the worst free-text
// history search on a big history. Not a test: it needs minutes and gigabytes.
//  - seeds BENCH_HISTORY_MB (default 2048) MB of calls with ~63 KB raw SOAP bodies into a fresh
//    SQLite file (one transaction, one prepared statement);
//  - starts the built server on it (dist/server.js: run `node build.mjs` first) and logs in;
//  - drives GET /AuthCodeSending.asmx/AuthCode with autocannon, alone and then while
//    BENCH_SEARCH_CLIENTS (default 4) clients loop GET /api/calls?q=<text that matches nothing>
//    (the worst search: every call examined), following nextCursor back through the history;
//  - prints the GET binding's p99 in both runs against the 50 ms target, the server's event-loop
//    delay (bench/loop-delay.mjs), /healthz under load, the WAL's size, and how long the server
//    takes to stop with searches under way.
// BENCH_SECONDS (10) per run, BENCH_ROUNDS (2) of both runs alternated, BENCH_CONNECTIONS (10),
// BENCH_RATE (0: saturate; else requests/s offered), BENCH_SEARCH_CLIENTS (4).
// BENCH_DATA_DIR keeps (and reuses) the seeded database; by default it is a temporary folder.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import SQLite from 'better-sqlite3';

const here = path.dirname(fileURLToPath(import.meta.url));
const HISTORY_MB = Number(process.env.BENCH_HISTORY_MB ?? 2048);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const SEARCH_CLIENTS = Number(process.env.BENCH_SEARCH_CLIENTS ?? 4);
// Rounds of (alone, under search load), alternated so that a noisy neighbour hits both alike.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
// Requests per second offered to the binding in all (autocannon's overallRate); 0: as many as the
// connections can send (saturation, the harsher test).
const RATE = Number(process.env.BENCH_RATE ?? 0);
const TARGET_P99_MS = 50;
const BODY_BYTES = 63 * 1024;
const ADMIN = { username: 'bench-admin', password: 'bench password long enough' };
const WORST_Q = 'no-such-text-anywhere';
const GET_BINDING = '/AuthCodeSending.asmx/AuthCode?code=1234&phone=%2B447911123456';

const keep = process.env.BENCH_DATA_DIR;
const dataDir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'school-search-bench-'));
const dbFile = path.join(dataDir, 'school-messaging.db');
// The seeded history, copied over the server's file before each start when BENCH_DATA_DIR keeps it
// (the binding's calls would otherwise pile up at the newest end from one run to the next).
const seededFile = path.join(dataDir, 'seeded.db');
const loopDelayFile = path.join(dataDir, 'loop-delay.json');

/** Servers started and not yet stopped: killed if the bench fails half-way. */
const children = new Set();

async function startServer(env = {}) {
  fs.rmSync(loopDelayFile, { force: true });
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(
    process.execPath,
    [
      '--max-semi-space-size=8',
      '--import',
      pathToFileURL(path.join(here, 'loop-delay.mjs')).href,
      path.join(here, '../dist/server.js'),
    ],
    {
      env: {
        ...process.env,
        BENCH_LOOP_DELAY_FILE: loopDelayFile,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        ADMIN_USERNAME: ADMIN.username,
        ADMIN_PASSWORD: ADMIN.password,
        ASMX_LIMIT_PER_IP: 'off',
        AUTHCODE_LIMIT_PER_IP: 'off',
        AUTHCODE_LIMIT_PER_RANGE: 'off',
        AUTHCODE_LIMIT_PER_PHONE: 'off',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  children.add(child);
  child.once('exit', () => children.delete(child));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { url, port, child };
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('server did not start');
}

/** The server's event-loop delay since the last call (bench/loop-delay.mjs), in ms. */
async function loopDelay(child) {
  const before = fs.existsSync(loopDelayFile)
    ? JSON.parse(fs.readFileSync(loopDelayFile, 'utf8')).sequence
    : 0;
  child.kill('SIGWINCH');
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 20));
    try {
      const stats = JSON.parse(fs.readFileSync(loopDelayFile, 'utf8'));
      if (stats.sequence > before) return stats;
    } catch {}
  }
  throw new Error('the server did not report its event-loop delay');
}

async function stop(child) {
  const started = performance.now();
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return performance.now() - started;
}

/** POST /api/session; answers the session cookie for later requests. */
async function login(server) {
  const res = await fetch(`${server.url}/api/session`, {
    method: 'POST',
    headers: { origin: server.url, 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  const cookie = res.headers.get('set-cookie')?.split(';')[0];
  if (!res.ok || !cookie) throw new Error(`login failed: ${res.status} ${await res.text()}`);
  return cookie;
}

function seed() {
  const db = new SQLite(dbFile);
  // A fresh file written once: no journal, no syncs. The server puts it back in WAL mode.
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -65536');
  const insert = db.prepare(
    'INSERT INTO calls (at, group_name, operation, binding, caller_ip, user_agent, params, outcome, status, error, duration_ms, request, request_bytes, response, response_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  // A dozen different payloads (base64, like the attachments that made the bodies big).
  const payloads = Array.from({ length: 12 }, () =>
    crypto.randomBytes(Math.floor((BODY_BYTES - 600) * 0.75)).toString('base64'),
  );
  const rowBytes = BODY_BYTES + 700;
  const total = Math.ceil((HISTORY_MB * 1024 * 1024) / rowBytes);
  const now = Date.now();
  const span = 90 * 24 * 3_600_000;
  const bindings = ['soap11', 'soap12', 'http-post'];
  db.transaction(() => {
    for (let i = 0; i < total; i++) {
      const phone = `+4479111${String(i % 100000).padStart(5, '0')}`;
      const body = `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><SendNotificationType xmlns="http://tempuri.org/"><id>${i}</id><phone>${phone}</phone><content>${payloads[i % payloads.length]}</content></SendNotificationType></soap:Body></soap:Envelope>`;
      const request = `POST /NotificationNotes.asmx HTTP/1.1\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: "http://tempuri.org/SendNotificationType"\r\n\r\n${body}`;
      const response =
        'HTTP/1.1 200\r\nContent-Type: text/xml; charset=utf-8\r\n\r\n<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><SendNotificationTypeResponse xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>';
      insert.run(
        now - span + Math.floor((i / total) * span),
        'NotificationNotes',
        'SendNotificationType',
        bindings[i % bindings.length],
        '198.51.100.23',
        'ksoap2-android/2.6.0+',
        JSON.stringify({ id: String(i), phone }),
        'ok',
        200,
        null,
        3.1,
        request,
        request.length,
        response,
        response.length,
      );
    }
  })();
  db.close();
  return total;
}

async function load(url, duration) {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration,
    ...(RATE > 0 ? { overallRate: RATE } : {}),
    requests: [{ method: 'GET', path: GET_BINDING }],
  });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
  };
}

/** `clients` loops of the worst search (first page, again and again) until `stop()`. */
function searchLoad(server, cookie) {
  const stats = {
    done: 0,
    busy: 0,
    errors: 0,
    times: [],
    stopped: 0,
    scanned: 0,
    wholeHistory: 0,
  };
  let running = false;
  let loops = [];
  // Each client clicks "Load more" for as long as there is more (the scan goes on back through
  // the whole history, past the binding's small calls at the newest end), then starts again.
  const loop = async () => {
    let cursor = null;
    while (running) {
      const t = performance.now();
      try {
        const url = `${server.url}/api/calls?limit=50&q=${WORST_Q}${cursor ? `&cursor=${cursor}` : ''}`;
        const res = await fetch(url, { headers: { cookie } });
        const body = await res.json();
        if (res.status === 503) stats.busy++;
        else if (!res.ok) stats.errors++;
        else {
          stats.done++;
          stats.times.push(performance.now() - t);
          stats.scanned += body.search?.scanned ?? 0;
          if (body.search && !body.search.complete) stats.stopped++;
          cursor = body.nextCursor;
          if (!cursor) stats.wholeHistory++;
        }
      } catch {
        if (running) stats.errors++;
      }
    }
  };
  return {
    stats,
    start(clients) {
      running = true;
      loops = Array.from({ length: clients }, loop);
    },
    /** Stops starting searches; resolves once those under way have answered. */
    stop() {
      running = false;
      return Promise.allSettled(loops);
    },
  };
}

/** The largest the WAL file got while the searches ran (a reader that never lets go makes it grow). */
let walMaxBytes = 0;

/** Samples GET /healthz every 50 ms until `stop()`; answers the latencies. */
function healthProbe(server) {
  const times = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        walMaxBytes = Math.max(walMaxBytes, fs.statSync(`${dbFile}-wal`).size);
      } catch {}
      const t = performance.now();
      try {
        await (await fetch(`${server.url}/healthz`)).text();
        times.push(performance.now() - t);
      } catch {}
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return times;
    },
  };
}

const percentile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};

try {
  // 1. The schema from the server's own migrations, then the history seeded directly.
  const reuse =
    keep && fs.existsSync(seededFile) && fs.statSync(seededFile).size > HISTORY_MB * 2 ** 20 * 0.9;
  if (reuse) {
    for (const suffix of ['-wal', '-shm']) fs.rmSync(dbFile + suffix, { force: true });
    fs.copyFileSync(seededFile, dbFile);
    console.log(`reusing ${seededFile} (${(fs.statSync(dbFile).size / 2 ** 20).toFixed(0)} MB)`);
  } else {
    const server = await startServer();
    await stop(server.child);
    const started = performance.now();
    const rows = seed();
    console.log(
      `seeded ${rows.toLocaleString('en')} calls of ~63 KB (${(fs.statSync(dbFile).size / 2 ** 20).toFixed(0)} MB) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    if (keep) fs.copyFileSync(dbFile, seededFile);
  }

  // The file in the OS page cache, as on a server that has been up a while.
  const handle = fs.openSync(dbFile, 'r');
  const buffer = Buffer.alloc(8 * 2 ** 20);
  while (fs.readSync(handle, buffer) > 0);
  fs.closeSync(handle);

  const server = await startServer();
  const cookie = await login(server);
  // Warm up: the binding, and one search (starts the worker).
  await load(server.url, 2);
  const warm = performance.now();
  const first = await (
    await fetch(`${server.url}/api/calls?limit=50&q=${WORST_Q}`, { headers: { cookie } })
  ).json();
  console.log(
    `first search: ${(performance.now() - warm).toFixed(0)} ms, ${first.search?.scanned} calls examined, complete: ${first.search?.complete}`,
  );
  console.log(
    `\nautocannon: ${CONNECTIONS} connections on GET ${GET_BINDING.split('?')[0]}, ${RATE > 0 ? `${RATE} req/s offered` : 'saturating'}, ${SECONDS} s per run, ${ROUNDS} rounds\n`,
  );

  // 2. Rounds of: the binding alone; the binding while the searches loop.
  const runs = [];
  const healthTimes = [];
  const search = searchLoad(server, cookie);
  for (let round = 1; round <= ROUNDS; round++) {
    await loopDelay(server.child);
    const alone = await load(server.url, SECONDS);
    runs.push({
      name: `round ${round}: alone`,
      ...alone,
      loop: await loopDelay(server.child),
      loaded: false,
    });
    search.start(SEARCH_CLIENTS);
    const health = healthProbe(server);
    await new Promise((r) => setTimeout(r, 500));
    await loopDelay(server.child);
    const loaded = await load(server.url, SECONDS);
    runs.push({
      name: `round ${round}: ${SEARCH_CLIENTS} clients looping q=${WORST_Q}`,
      ...loaded,
      loop: await loopDelay(server.child),
      loaded: true,
    });
    healthTimes.push(...(await health.stop()));
    // The searches keep running after the last round, for the stop below.
    if (round < ROUNDS) await search.stop();
  }

  // 3. Stopping the server with the searches still under way.
  const searchesEnded = search.stop();
  const stopMs = await stop(server.child);
  await searchesEnded;

  console.log(
    'GET binding'.padEnd(56),
    'req/s'.padStart(8),
    'p50 ms'.padStart(8),
    'p99 ms'.padStart(8),
    'max ms'.padStart(8),
    '  server main thread: loop delay p99 / max ms, CPU %, preempted',
  );
  for (const r of runs) {
    console.log(
      r.name.padEnd(56),
      r.rps.toFixed(0).padStart(8),
      String(r.p50).padStart(8),
      String(r.p99).padStart(8),
      String(r.max).padStart(8),
      `  ${r.loop.p99} / ${r.loop.max}, ${r.loop.cpu}%, ${r.loop.preempted}x`,
    );
  }
  const s = search.stats;
  console.log(
    `\nsearches answered: ${s.done} (stopped by the budget: ${s.stopped}, 503: ${s.busy}, errors: ${s.errors}), ` +
      `p50 ${percentile(s.times, 0.5).toFixed(0)} ms, max ${Math.max(...s.times).toFixed(0)} ms, ` +
      `${s.done ? Math.round(s.scanned / s.done).toLocaleString('en') : 0} calls examined per search, ` +
      `the whole history searched ${s.wholeHistory} times`,
  );
  console.log(
    `/healthz under the search load: ${healthTimes.length} samples, p50 ${percentile(healthTimes, 0.5).toFixed(1)} ms, p99 ${percentile(healthTimes, 0.99).toFixed(1)} ms, max ${Math.max(...healthTimes).toFixed(1)} ms`,
  );
  console.log(`WAL file under the search load: at most ${(walMaxBytes / 2 ** 20).toFixed(1)} MB`);
  console.log(`server stopped in ${stopMs.toFixed(0)} ms with the searches under way`);
  const worst = (loaded) => Math.max(...runs.filter((r) => r.loaded === loaded).map((r) => r.p99));
  const ok = worst(true) <= TARGET_P99_MS;
  console.log(
    `\nGET binding p99, worst round: ${worst(false)} ms alone, ${worst(true)} ms under search load ` +
      `(${ok ? '<=' : '>'} ${TARGET_P99_MS} ms target: ${ok ? 'PASS' : 'FAIL'})`,
  );
} finally {
  for (const child of children) child.kill('SIGKILL');
  if (!keep) fs.rmSync(dataDir, { recursive: true, force: true });
}
