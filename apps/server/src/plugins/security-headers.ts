import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HELP_PAGE_STYLE } from '@school/asmx';
import fp from 'fastify-plugin';
import helmet, { type HelmetOptions } from 'helmet';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A route's security headers: helmet settings laid over the server's, `false` for none, or
     * `PROBE_HEADERS` for a probe's two. The same object for every route that shares it: its
     * headers are worked out once.
     */
    securityHeaders?: HelmetOptions | false | typeof PROBE_HEADERS;
  }
}

/**
 * The console's policy: everything from this origin, nothing inline, never framed. The console
 * is built without inline script or style (apps/console/README.md).
 */
const CONSOLE_CSP = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  fontSrc: ["'self'"],
  connectSrc: ["'self'"],
  objectSrc: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
};

/** The ASMX help pages carry one fixed inline style sheet: allowed by its hash, nothing else inline. */
const HELP_STYLE_HASH = `'sha256-${createHash('sha256').update(HELP_PAGE_STYLE).digest('base64')}'`;

/** Route settings for the `.asmx` help pages. */
export const HELP_PAGE_HEADERS: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { ...CONSOLE_CSP, styleSrc: ["'self'", HELP_STYLE_HASH] },
  },
};

/** Route settings for answers old clients parse byte for byte: the `.asmx` operation answers. */
export const NO_SECURITY_HEADERS = false;

/**
 * Route settings for the probes (`/healthz`, `/readyz`, `/metrics`): they answer machines, not
 * browsers, so a policy for pages (CSP, frame, cross-origin and referrer policies, HSTS) has
 * nothing to act on. They keep what a client of any kind reads: the body is the type it is said
 * to be (`nosniff`), and no cache keeps a probe's answer (`no-store`): a cached health is a lie.
 */
export const PROBE_HEADERS = 'probe';

/**
 * The headers helmet sets for `options`, worked out once. Helmet builds its middleware from the
 * options (parsing and checking the CSP directives) each time it is asked, and @fastify/helmet
 * asked on every request, a large part of the CPU of a server answering `/healthz`
 * (docs/performance.md#what-was-tried). With no directive
 * computed per request (no nonces here), the headers are the same on every answer.
 */
export function securityHeaders(options: HelmetOptions): ReadonlyArray<readonly [string, string]> {
  const headers: Array<[string, string]> = [];
  const res = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers.push([name, String(value)]);
    },
    // X-Powered-By: Node never sets it, nor does Fastify.
    removeHeader() {},
  };
  helmet(options)({} as IncomingMessage, res as unknown as ServerResponse, (err?: unknown) => {
    if (err) throw err;
  });
  return headers;
}

/**
 * Security headers (docs/security.md) on the console, the API and the help pages: a strict
 * Content-Security-Policy with no inline script, `frame-ancestors 'none'`, `nosniff`, a
 * same-origin Referrer-Policy, and HSTS when PUBLIC_BASE_URL is https. The `.asmx` operation
 * answers go out as ASMX wrote them (the `.asmx` plugin opts its routes out); the probes carry
 * only `nosniff` and `no-store` (PROBE_HEADERS).
 */
export const securityHeadersPlugin = fp(
  async (app) => {
    const https = app.config.PUBLIC_BASE_URL?.startsWith('https:') ?? false;
    const server: HelmetOptions = {
      contentSecurityPolicy: { useDefaults: false, directives: CONSOLE_CSP },
      strictTransportSecurity: https ? { maxAge: 31_536_000, includeSubDomains: false } : false,
      referrerPolicy: { policy: 'same-origin' },
      // The console loads nothing cross-origin; COEP would only get in the way of opening PDFs.
      crossOriginEmbedderPolicy: false,
    };
    const serverHeaders = securityHeaders(server);
    const byRoute = new WeakMap<HelmetOptions, ReturnType<typeof securityHeaders>>();
    app.addHook('onRequest', (request, reply, done) => {
      const route = request.routeOptions.config.securityHeaders;
      if (route === false) return done();
      if (route === PROBE_HEADERS) {
        // Two headers, not the console's twelve: each is checked by Node as it is written, and a
        // probe pays for every header it sets (docs/performance.md#what-was-tried).
        reply.raw.setHeader('X-Content-Type-Options', 'nosniff');
        reply.raw.setHeader('Cache-Control', 'no-store');
        return done();
      }
      let headers = route ? byRoute.get(route) : serverHeaders;
      if (!headers) {
        headers = securityHeaders({ ...server, ...route } as HelmetOptions);
        byRoute.set(route as HelmetOptions, headers);
      }
      for (const [name, value] of headers) reply.raw.setHeader(name, value);
      done();
    });
  },
  { name: 'security-headers', dependencies: ['config'] },
);
