import fs from 'node:fs';
import net from 'node:net';

/**
 * A TCP proxy that breaks the network on demand, for fault tests: the server under test is given
 * `proxy.url(databaseUrl)` as its DATABASE_URL and the test severs, refuses or stalls the
 * connections between them, then heals. Listens on 127.0.0.1 only.
 *
 * Modes: `forward` (normal), `stall` (a hung network) and `refuse` (nothing listens). `sever()` is
 * an event, not a mode: it resets the open connections and leaves the mode as it is.
 *
 * Under `stall`, nothing is lost: the proxy stops reading both sides, so what either side sends
 * waits in the proxy (at most a socket's read buffer) or in the kernel (TCP flow control), and a
 * connection accepted during the stall is connected to the target only on heal. On `heal()` the
 * held bytes go through in order, as TCP delivers them after a network hang. A peer that goes
 * away during a stall is not noticed until heal, as over a hung network. A test that wants the
 * held data thrown away severs first: `sever()` then `heal()`.
 *
 * The client connects to the proxy before the proxy connects to the target: a target that is down
 * (a stopped private cluster) shows as a reset connection (ECONNRESET), not ECONNREFUSED; only
 * `refuse()` refuses.
 */

export type FaultMode = 'forward' | 'stall' | 'refuse';

export interface FaultProxyOptions {
  /** The target (PostgreSQL). */
  readonly host: string;
  readonly port: number;
  /** The port to listen on; by default one outside the kernel's ephemeral range (`stablePort`). */
  readonly listenPort?: number;
}

export interface FaultProxy {
  /** The port the proxy listens on; the same after refuse and heal. */
  readonly port: number;
  readonly mode: FaultMode;
  /** Client connections open now (a connection held by a stall counts). */
  readonly connections: number;
  /** Client connections accepted since the start. */
  readonly accepted: number;
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  url(databaseUrl: string): string;
  /** Resets every open connection, both sides, at once; the mode is unchanged. */
  sever(): void;
  /**
   * Stops listening (new connections get ECONNREFUSED) and severs the open ones; resolves once
   * the listening socket is closed.
   */
  refuse(): Promise<void>;
  /** Open and new connections stay open, but no byte is forwarded until heal. */
  stall(): void;
  /** Back to forwarding: listens again on the same port if refused, releases what a stall held. */
  heal(): Promise<void>;
  /** Severs everything and stops listening for good. */
  close(): Promise<void>;
}

/** One direction of a connection: what a stall held back from `from`, and whether `from` ended. */
interface Flow {
  readonly from: net.Socket;
  held: Buffer[];
  ended: boolean;
}

interface Connection {
  readonly client: net.Socket;
  /** Undefined while a stall defers connecting to the target. */
  upstream: net.Socket | undefined;
  /** Client to target. */
  readonly up: Flow;
  /** Target to client, once connected. */
  down: Flow | undefined;
}

const LOOPBACK = '127.0.0.1';

/**
 * A port nothing listens on, outside the range the kernel picks from for `listen(0)` (`freePort`)
 * and outgoing connections: while the proxy refuses, its port is free, and a port in that range
 * could be handed to another test's server or to a client socket before the proxy listens again.
 */
export async function stablePort(): Promise<number> {
  let low = 49152;
  try {
    const range = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    low = Number(range[0]) || low;
  } catch {}
  const first = 10_000;
  if (low - first >= 1000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = first + Math.floor(Math.random() * (low - first));
      if (await canListen(port)) return port;
    }
  }
  // No room below the range: any free port, with the small risk above.
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, LOOPBACK, () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, LOOPBACK, () => s.close(() => resolve(true)));
  });
}

/** Resets `socket` (RST, the peer reads ECONNRESET) or, if it cannot, just destroys it. */
function abort(socket: net.Socket | undefined): void {
  if (!socket || socket.destroyed) return;
  if (socket.connecting) socket.destroy();
  else socket.resetAndDestroy();
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const port = options.listenPort ?? (await stablePort());
  const open = new Set<Connection>();
  let mode: FaultMode = 'forward';
  let closed = false;
  let accepted = 0;
  let server: net.Server | undefined;

  /** Forwards what `from` sends to `to()`, or holds it while stalled or not yet connected. */
  function flow(from: net.Socket, to: () => net.Socket | undefined): Flow {
    const f: Flow = { from, held: [], ended: false };
    from.on('data', (chunk: Buffer) => {
      const target = to();
      if (mode === 'stall' || !target) {
        f.held.push(chunk);
        from.pause();
        return;
      }
      if (!target.write(chunk)) {
        from.pause();
        target.once('drain', () => {
          if (mode === 'forward') from.resume();
        });
      }
    });
    from.on('end', () => {
      f.ended = true;
      if (mode !== 'stall') to()?.end();
    });
    return f;
  }

  /** Resets both sides and forgets the connection. */
  function drop(c: Connection): void {
    open.delete(c);
    abort(c.client);
    abort(c.upstream);
  }

  /** One side is gone: the other gets what is still on its way, then an orderly close. */
  function hangUp(c: Connection): void {
    open.delete(c);
    for (const s of [c.client, c.upstream]) if (s && !s.destroyed) s.end(() => s.destroy());
  }

  /** Writes what a stall held back, in order, and reads both sides again. */
  function flush(c: Connection): void {
    for (const [f, target] of [
      [c.up, c.upstream],
      [c.down, c.client],
    ] as const) {
      if (!f || !target || target.destroyed) continue;
      for (const chunk of f.held) target.write(chunk);
      f.held = [];
      if (f.ended) target.end();
      f.from.resume();
    }
  }

  function connectUpstream(c: Connection): void {
    const upstream = net.connect({ host: options.host, port: options.port });
    upstream.setNoDelay(true);
    c.upstream = upstream;
    c.down = flow(upstream, () => c.client);
    // The target refused or reset: the client's connection is reset too (a stall defers it).
    upstream.on('error', () => {
      if (mode !== 'stall') drop(c);
    });
    upstream.on('close', () => {
      if (mode !== 'stall') hangUp(c);
    });
    // Writes made while connecting are sent once connected.
    flush(c);
  }

  function onConnection(client: net.Socket): void {
    if (mode === 'refuse' || closed) {
      // Accepted by the kernel just before the listening socket closed.
      client.on('error', () => {});
      client.destroy();
      return;
    }
    accepted++;
    client.setNoDelay(true);
    const c: Connection = {
      client,
      upstream: undefined,
      up: flow(client, () => c.upstream),
      down: undefined,
    };
    open.add(c);
    client.on('error', () => {
      if (mode !== 'stall') drop(c);
    });
    client.on('close', () => {
      if (mode !== 'stall') hangUp(c);
    });
    if (mode === 'forward') connectUpstream(c);
    else client.pause();
  }

  async function listen(): Promise<void> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const s = net.createServer(onConnection);
      try {
        await new Promise<void>((resolve, reject) => {
          s.once('error', reject);
          s.listen(port, LOOPBACK, () => {
            s.off('error', reject);
            resolve();
          });
        });
        s.on('error', () => {});
        server = s;
        return;
      } catch (err) {
        // Still held for a moment after it was released (or briefly taken): try again, briefly.
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  async function unlisten(): Promise<void> {
    const s = server;
    server = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  function sever(): void {
    for (const c of [...open]) drop(c);
  }

  await listen();

  return {
    port,
    get mode() {
      return mode;
    },
    get connections() {
      return open.size;
    },
    get accepted() {
      return accepted;
    },
    url(databaseUrl) {
      const u = new URL(databaseUrl);
      u.hostname = LOOPBACK;
      u.port = String(port);
      // A host or port in the query string would win over the URL's.
      for (const p of ['host', 'hostaddr', 'port']) u.searchParams.delete(p);
      return u.toString();
    },
    sever,
    async refuse() {
      if (closed) throw new Error('the proxy is closed');
      mode = 'refuse';
      sever();
      await unlisten();
    },
    stall() {
      if (mode === 'refuse') throw new Error('heal a refusing proxy before stalling it');
      mode = 'stall';
      for (const c of open) {
        c.client.pause();
        c.upstream?.pause();
      }
    },
    async heal() {
      if (closed) throw new Error('the proxy is closed');
      const was = mode;
      mode = 'forward';
      if (was === 'refuse') await listen();
      if (was !== 'stall') return;
      for (const c of [...open]) {
        if (!c.upstream && !c.client.destroyed) connectUpstream(c);
        else flush(c);
        // A side that went away during the stall: the other learns it now, after the held bytes.
        if (c.client.destroyed || c.upstream?.destroyed) hangUp(c);
      }
    },
    async close() {
      closed = true;
      mode = 'refuse';
      sever();
      await unlisten();
    },
  };
}
