import { createHash } from 'node:crypto';
import helmet from '@fastify/helmet';
import { HELP_PAGE_STYLE } from '@school/asmx';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** @fastify/helmet's per-route settings; `{ skipRoute: true }` for none. */
    helmet?: Record<string, unknown>;
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
export const HELP_PAGE_HEADERS = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { ...CONSOLE_CSP, styleSrc: ["'self'", HELP_STYLE_HASH] },
  },
};

/** Route settings for answers old clients parse byte for byte: the `.asmx` operation answers. */
export const NO_SECURITY_HEADERS = { skipRoute: true };

/**
 * Security headers (docs/security.md) on the console, the API and the help pages: a strict
 * Content-Security-Policy with no inline script, `frame-ancestors 'none'`, `nosniff`, a
 * same-origin Referrer-Policy, and HSTS when PUBLIC_BASE_URL is https. The `.asmx` operation
 * answers go out as ASMX wrote them (the `.asmx` plugin opts its routes out).
 */
export const securityHeadersPlugin = fp(
  async (app) => {
    const https = app.config.PUBLIC_BASE_URL?.startsWith('https:') ?? false;
    await app.register(helmet, {
      contentSecurityPolicy: { useDefaults: false, directives: CONSOLE_CSP },
      strictTransportSecurity: https ? { maxAge: 31_536_000, includeSubDomains: false } : false,
      referrerPolicy: { policy: 'same-origin' },
      // The console loads nothing cross-origin; COEP would only get in the way of opening PDFs.
      crossOriginEmbedderPolicy: false,
    });
  },
  { name: 'security-headers', dependencies: ['config'] },
);
