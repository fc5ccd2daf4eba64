/**
 * A real HTTP server on 127.0.0.1 standing in for a provider: it records every request exactly as
 * received (method, path with query, headers, raw body) and answers what the test scripts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

export interface FakeAnswer {
  readonly status: number;
  readonly headers?: Record<string, string>;
  /** An object is sent as JSON. */
  readonly body?: string | object;
  /** Wait this long before answering (timeouts). */
  readonly delayMs?: number;
}

export type FakeHandler = (request: ReceivedRequest) => FakeAnswer | Promise<FakeAnswer>;

export interface FakeServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Replaces how the server answers from now on. */
  answer(handler: FakeHandler): void;
  close(): Promise<void>;
}

export async function startFakeServer(handler: FakeHandler = () => ({ status: 200 })): Promise<FakeServer> {
  let current = handler;
  const requests: ReceivedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(received);
      try {
        const answer = await current(received);
        if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
        if (res.destroyed) return;
        const isJson = typeof answer.body === 'object';
        const body =
          answer.body === undefined ? '' : isJson ? JSON.stringify(answer.body) : String(answer.body);
        res.writeHead(answer.status, {
          ...(isJson ? { 'Content-Type': 'application/json' } : {}),
          ...answer.headers,
        });
        res.end(body);
      } catch (error) {
        res.writeHead(599);
        res.end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    answer(next) {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A URL on which nothing listens: a server is started, its port noted, and the server closed. */
export async function refusedUrl(): Promise<string> {
  const fake = await startFakeServer();
  await fake.close();
  return fake.url;
}

/** Every text a result carries, for "no secret in it" checks. */
export function resultText(result: object): string {
  return JSON.stringify(result);
}
