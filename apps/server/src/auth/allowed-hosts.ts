declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answered whatever Host the request names (probes and scrapers): /healthz, /readyz, /metrics. */
    anyHost?: boolean;
  }
}

/** What a request naming another host is answered (421), in plain text. */
export const HOST_REFUSED = 'This server does not answer for that host name.';

/** Host names the server answers for (ALLOWED_HOSTS); undefined: any (`ALLOWED_HOSTS=*`). */
export function hostAllowList(config: {
  ALLOWED_HOSTS?: string[] | undefined;
  PUBLIC_BASE_URL?: string | undefined;
  HOST: string;
}): Set<string> | undefined {
  if (config.ALLOWED_HOSTS?.includes('*')) return undefined;
  const hosts = new Set(config.ALLOWED_HOSTS?.map(hostName) ?? []);
  if (!config.ALLOWED_HOSTS) {
    for (const h of ['localhost', '127.0.0.1', '[::1]']) hosts.add(h);
    if (config.PUBLIC_BASE_URL) hosts.add(new URL(config.PUBLIC_BASE_URL).hostname.toLowerCase());
    if (!['0.0.0.0', '::', ''].includes(config.HOST))
      hosts.add(
        hostName(
          config.HOST.includes(':') && !config.HOST.startsWith('[') ? `[${config.HOST}]` : config.HOST,
        ),
      );
  }
  return hosts;
}

/**
 * A Host header as RFC 9110 §7.2 reads it, `uri-host [ ":" port ]`, the port only digits:
 * `Example.org:3000` → `example.org`; `[::1]:3000` → `[::1]`. Anything else — `127.0.0.1:80@evil.example`,
 * `[::1]evil.example`, a user-info part, a path — is no host name at all: `''`, which no
 * allow-list holds.
 */
export function hostName(host: string): string {
  const lower = host.trim().toLowerCase();
  const literal = /^(\[[0-9a-f:.]+\])(?::\d*)?$/.exec(lower);
  if (literal) return literal[1] as string;
  // reg-name or IPv4: unreserved, percent-encoded and sub-delimiter characters (RFC 3986 §3.2.2).
  const named = /^([a-z0-9\-._~%!$&'()*+,;=]+)(?::\d*)?$/.exec(lower);
  return named ? (named[1] as string).replace(/\.$/, '') : '';
}
