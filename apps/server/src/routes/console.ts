import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';
import { problem, sendProblem } from '../http/problem.js';

/**
 * Serves the built console at `/`. Client routes (`/history?…`, `/send/AuthCode`) fall back to
 * index.html; `/api` and `.asmx` paths never do: they answer their own 404s.
 */

/**
 * Whether a path is the API's, however it is spelled: `//api/users` and `/API/users` are routed
 * to no API route (Fastify matches paths exactly), yet a client that sends them means the API and
 * must get the API's answer, a 404 problem, not the console's page.
 */
export function isApiPath(path: string): boolean {
  return /^\/+api(\/|$)/i.test(path);
}
export const consoleRoutes: FastifyPluginAsync<{ root: string }> = async (app, { root }) => {
  const index = path.join(root, 'index.html');
  const built = fs.existsSync(index);
  if (built) {
    await app.register(fastifyStatic, {
      root,
      wildcard: false,
      index: false,
      // Vite's hashed assets never change; index.html always revalidates.
      setHeaders(reply, file) {
        reply.header(
          'cache-control',
          file.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache',
        );
      },
    });
  } else {
    app.log.warn({ root }, 'the console is not built: run `pnpm build` (pnpm start does)');
  }

  app.setNotFoundHandler((request, reply) => {
    const url = request.url.split('?')[0] ?? '/';
    if (isApiPath(url))
      return sendProblem(reply, problem(404, `There is no ${request.method} ${url} in the API.`));
    const isPage =
      (request.method === 'GET' || request.method === 'HEAD') &&
      !/\.asmx(\/|$)/i.test(url) &&
      !path.extname(url);
    if (!isPage)
      return reply.code(404).type('text/plain; charset=utf-8').send(`Not found: ${request.method} ${url}`);
    if (!built) {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The console is not built. Run `pnpm build` (or `pnpm start`, which builds it).');
    }
    return reply.header('cache-control', 'no-cache').sendFile('index.html');
  });
};
