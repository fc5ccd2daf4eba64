import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built server (dist/server.js, built once by the global setup) for tests that run it as a process. */
export const SERVER_ENTRY = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  'dist',
  'server.js',
);

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}
