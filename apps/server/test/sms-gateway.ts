import http from 'node:http';
import type net from 'node:net';

/**
 * A fake SMS gateway for tests: a real HTTP server taking what the `http` provider sends
 * (`POST /send`, a form with `to` and `text`, an `Idempotency-Key` header) and, as a real gateway
 * with idempotency keys does, sending a key's message once however often it is asked.
 */
export interface SmsGateway {
  readonly url: string;
  /** Messages sent to phones, in order: one per idempotency key. */
  readonly sent: { key: string; to: string; text: string }[];
  /** Requests received, repeats of a key included. */
  requests: number;
  /** Requests received per idempotency key. */
  readonly requestsByKey: Map<string, number>;
  /** How long each send takes (ms). */
  delayMs: number;
  /** While true, requests are held without an answer (a gateway that hangs). */
  hanging: boolean;
  /** While set, requests are answered with this status (e.g. 503) and nothing is sent. */
  refusing: number | undefined;
  /**
   * The body of those answers: its reason, as a gateway words it (`{"error":"account suspended"}`);
   * `{to}` stands for the number it was asked to send to.
   */
  refusal: string;
  /** When each message was sent (epoch ms), by phone. */
  readonly sentAt: Map<string, number>;
  /**
   * While set, at most this many requests are served at once (a small on-premises box); the
   * others wait their turn, and a client that gives up meanwhile is not served.
   */
  atOnce: number | undefined;
  /** The most requests that were waiting for their turn at once. */
  mostWaiting: number;
  close(): Promise<void>;
}

export async function startSmsGateway(delayMs = 0): Promise<SmsGateway> {
  const byKey = new Map<string, string>();
  const gateway: SmsGateway = {
    url: '',
    sent: [],
    requests: 0,
    requestsByKey: new Map(),
    delayMs,
    hanging: false,
    refusing: undefined,
    refusal: '{"error":"refused"}',
    sentAt: new Map(),
    atOnce: undefined,
    mostWaiting: 0,
    close: async () => {},
  };
  let serving = 0;
  const turns: (() => void)[] = [];
  /** Runs `serve` when a turn is free; `serve` calls its argument when done. */
  const inTurn = (res: http.ServerResponse, serve: (done: () => void) => void) => {
    const start = () => {
      if (res.socket === null || res.socket.destroyed) return next();
      serving++;
      let finished = false;
      serve(() => {
        if (finished) return;
        finished = true;
        serving--;
        next();
      });
    };
    const next = () => {
      while (turns.length > 0 && (gateway.atOnce === undefined || serving < gateway.atOnce))
        turns.shift()?.();
    };
    if (gateway.atOnce === undefined || serving < gateway.atOnce) start();
    else {
      turns.push(start);
      gateway.mostWaiting = Math.max(gateway.mostWaiting, turns.length);
    }
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      gateway.requests++;
      const form = new URLSearchParams(body);
      const key = req.headers['idempotency-key'];
      const to = form.get('to');
      const text = form.get('text');
      if (req.method !== 'POST' || req.url !== '/send' || typeof key !== 'string' || !to || !text) {
        res.writeHead(400).end('bad request');
        return;
      }
      gateway.requestsByKey.set(key, (gateway.requestsByKey.get(key) ?? 0) + 1);
      if (gateway.hanging) return;
      if (gateway.refusing !== undefined) {
        res
          .writeHead(gateway.refusing, { 'content-type': 'application/json' })
          .end(gateway.refusal.replaceAll('{to}', to));
        return;
      }
      inTurn(res, (done) =>
        setTimeout(() => {
          done();
          let id = byKey.get(key);
          if (!id) {
            id = `msg-${byKey.size + 1}`;
            byKey.set(key, id);
            gateway.sent.push({ key, to, text });
            gateway.sentAt.set(to, Date.now());
          }
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id }));
        }, gateway.delayMs),
      );
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return Object.assign(gateway, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** The provider settings that send SMS through `gateway`. */
export const gatewayEnv = (gateway: SmsGateway): Record<string, string> => ({
  SMS_PROVIDER: 'http',
  SMS_HTTP_URL: `${gateway.url}/send`,
  SMS_HTTP_BODY: 'to={to}&text={text}',
  SMS_TEMPLATE: 'Your code is {code}',
});

/** The settings that make `gateway` the fallback SMS provider. */
export const fallbackGatewayEnv = (gateway: SmsGateway): Record<string, string> => ({
  SMS_FALLBACK_PROVIDER: 'http',
  SMS_FALLBACK_HTTP_URL: `${gateway.url}/send`,
  SMS_FALLBACK_HTTP_BODY: 'to={to}&text={text}',
});
