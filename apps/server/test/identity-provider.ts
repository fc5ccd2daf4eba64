import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real OpenID Connect provider for tests (oidc-provider, certified), on a loopback port: the
 * school's identity provider as the server meets it. Its login page is a plain HTML form where a
 * test (or Chromium, e2e/tests/sign-in.e2e.ts) types one of `accounts`' usernames; no password.
 */

/**
 * oidc-provider's two warnings about itself, left out of the test output: its supported runtimes
 * (Node 22+; this machine runs 20, which the server supports) and its in-memory store, meant for
 * development, which is what a test wants. Both come through console.warn as it is loaded and
 * built; any other warning still shows.
 */
const OWN_WARNINGS =
  /oidc-provider WARNING: (Unsupported runtime|a quick start development-only in-memory adapter)/;

async function withoutItsOwnWarnings<T>(work: () => T | Promise<T>): Promise<T> {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (!OWN_WARNINGS.test(String(args[0]))) warn(...args);
  };
  try {
    return await work();
  } finally {
    console.warn = warn;
  }
}

/** What the provider says of an account: standard claims, and groups. */
export interface TestAccount {
  readonly name?: string;
  readonly email?: string;
  readonly email_verified?: boolean;
  readonly preferred_username?: string;
  readonly groups?: readonly string[];
  /** Keycloak puts realm roles here (OIDC_ROLES_CLAIM=realm_access.roles). */
  readonly realm_access?: { readonly roles: readonly string[] };
}

export interface TestIdentityProvider {
  /** `http://127.0.0.1:{port}`: OIDC_ISSUER. */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Accounts by the login typed on its page; a test may change them between logins. */
  readonly accounts: Map<string, TestAccount>;
  close(): Promise<void>;
}

export async function startIdentityProvider(options: {
  /** The server's callback: `{PUBLIC_BASE_URL}/api/session/oidc/callback`. */
  readonly redirectUri: string;
  readonly accounts?: Record<string, TestAccount>;
  /**
   * True: the ID token carries the profile and groups claims. False (a provider that follows the
   * spec to the letter when it issues an access token): only `sub`; the rest from UserInfo.
   */
  readonly claimsInIdToken?: boolean;
  /** The port to listen on (a provider started again where it was); default: any free one. */
  readonly port?: number;
}): Promise<TestIdentityProvider> {
  const accounts = new Map(Object.entries(options.accounts ?? {}));
  const clientId = 'school-console';
  const clientSecret = 'a client secret for tests, long enough';
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

  const Provider = await withoutItsOwnWarnings(async () => (await import('oidc-provider')).default);
  const provider = await withoutItsOwnWarnings(
    () =>
      new Provider(issuer, {
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [options.redirectUri],
            response_types: ['code'],
            grant_types: ['authorization_code'],
            token_endpoint_auth_method: 'client_secret_post',
          },
        ],
        jwks: { keys: [{ ...key, use: 'sig', alg: 'RS256', kid: 'test' }] },
        cookies: { keys: ['a cookie key for the test provider'] },
        // PKCE required of every client, as the server always sends it: a flow without it fails.
        pkce: { required: () => true },
        conformIdTokenClaims: options.claimsInIdToken === false,
        scopes: ['openid', 'profile', 'email', 'groups', 'roles'],
        claims: {
          openid: ['sub'],
          profile: ['name', 'preferred_username'],
          email: ['email', 'email_verified'],
          groups: ['groups'],
          roles: ['realm_access'],
        },
        features: { devInteractions: { enabled: false } },
        // Set, so the provider does not warn of its defaults at each login.
        ttl: {
          AccessToken: 600,
          AuthorizationCode: 60,
          Grant: 600,
          IdToken: 600,
          Interaction: 600,
          Session: 600,
        },
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        async findAccount(_ctx, id) {
          if (!accounts.has(id)) return undefined;
          return {
            accountId: id,
            async claims() {
              return { sub: id, ...structuredClone(accounts.get(id) as object) };
            },
          };
        },
      }),
  );
  // Its warnings (development-only settings) are not the tests' business.
  provider.on('server_error', () => {});
  const callback = provider.callback();

  server.on('request', async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', issuer);
      // A browser asks for the icon of the sign-in page: it has none.
      if (url.pathname === '/favicon.ico') {
        res.statusCode = 204;
        res.end();
        return;
      }
      const interaction = /^\/interaction\/([\w-]+)$/.exec(url.pathname);
      if (interaction && req.method === 'GET') {
        res.setHeader('content-type', 'text/html; charset=utf-8');
        res.end(`<!doctype html><html lang="en"><title>Test school sign-in</title>
<h1>Test school sign-in</h1>
<form method="post" action="${url.pathname}">
<label>School username <input name="login" autocomplete="off"></label>
<button type="submit">Sign in</button></form></html>`);
        return;
      }
      if (interaction && req.method === 'POST') {
        const body = new URLSearchParams(await readBody(req));
        const login = body.get('login') ?? '';
        const details = await provider.interactionDetails(req, res);
        if (!accounts.has(login)) {
          await provider.interactionFinished(req, res, {
            error: 'access_denied',
            error_description: 'unknown account',
          });
          return;
        }
        const grant = new provider.Grant({ accountId: login, clientId: String(details.params.client_id) });
        grant.addOIDCScope(String(details.params.scope));
        const grantId = await grant.save();
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: login }, consent: { grantId } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      return callback(req, res);
    } catch (err) {
      res.statusCode = 500;
      res.end(String(err));
    }
  });

  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * What a browser does for a single sign-on, without one: follows the redirects from `startUrl`
 * (the server's /api/session/oidc/start), keeping each site's cookies, and types `login` into the
 * provider's sign-in form. Ends at the first page that is not a redirect, or one outside both
 * sites: where the server finally sent it, and the cookies it set on the server's origin.
 */
export async function signInThroughBrowser(
  startUrl: string,
  login: string,
  options: { readonly cookies?: Record<string, string> } = {},
): Promise<{ location: string; status: number; serverCookies: Map<string, string> }> {
  // Cookies by origin (the provider's and the server's are both on 127.0.0.1: ports tell them apart).
  const jars = new Map<string, Map<string, string>>();
  const serverOrigin = new URL(startUrl).origin;
  jars.set(serverOrigin, new Map(Object.entries(options.cookies ?? {})));
  const jar = (origin: string) => jars.get(origin) ?? new Map<string, string>();
  let url = startUrl;
  let method = 'GET';
  let body: string | undefined;
  for (let hop = 0; hop < 20; hop++) {
    const origin = new URL(url).origin;
    const cookies = jar(origin);
    jars.set(origin, cookies);
    const res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(body ? { body } : {}),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      const expired = attributes.some((a) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(a));
      if (expired || value === '') cookies.delete(name);
      else cookies.set(name, value);
    }
    method = 'GET';
    body = undefined;
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url).href;
      const next = new URL(url);
      // Back on the server, at a console page: where the sign-on ended.
      if (next.origin === serverOrigin && !next.pathname.startsWith('/api/')) {
        return {
          location: next.pathname + next.search,
          status: res.status,
          serverCookies: jar(serverOrigin),
        };
      }
      continue;
    }
    if (res.status === 200 && /\/interaction\//.test(url)) {
      // The provider's sign-in form: type the login, submit.
      await res.text();
      method = 'POST';
      body = new URLSearchParams({ login }).toString();
      continue;
    }
    return { location: url, status: res.status, serverCookies: jar(serverOrigin) };
  }
  throw new Error(`more than 20 redirects from ${startUrl}`);
}
