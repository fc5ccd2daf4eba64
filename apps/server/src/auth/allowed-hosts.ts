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

/** `Host: Example.org:3000` → `example.org`; `[::1]:3000` → `[::1]`. */
export function hostName(host: string): string {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.indexOf(':');
  return (colon === -1 ? lower : lower.slice(0, colon)).replace(/\.$/, '');
}
