import { CSRF_HEADER, CSRF_HEADER_VALUE } from '@school/contract';

export interface Account {
  readonly username: string;
  readonly password: string;
}

/**
 * The suite's first admin: global-setup.ts starts the server with ADMIN_USERNAME and
 * ADMIN_PASSWORD, which it creates at start as no user exists yet.
 */
export const ADMIN: Account = { username: 'admin', password: 'e2e-admin-password-2026' };

/** The environment that makes a fresh server create ADMIN. */
export const ADMIN_ENV = { ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password } as const;

export interface Api {
  /** fetch on the server with the session's cookie, and what the server asks of state-changing requests. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** The session cookie (`name=value`), to check it stops working. */
  readonly cookie: string;
}

/**
 * A session for Node-side API calls (setting up data as staff would), logged in as `account`.
 * Its requests carry the console's Origin and CSRF header as the browser's do.
 */
export async function apiSession(base: string, account: Account = ADMIN): Promise<Api> {
  const headers = { origin: base, [CSRF_HEADER]: CSRF_HEADER_VALUE };
  const login = await fetch(`${base}/api/session`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(account),
  });
  if (login.status !== 200)
    throw new Error(`login as ${account.username}: ${login.status} ${await login.text()}`);
  const setCookie = login.headers.getSetCookie().find((c) => /^(__Host-)?session=/.test(c));
  if (!setCookie) throw new Error('the login set no session cookie');
  const cookie = setCookie.split(';')[0] ?? '';
  return {
    cookie,
    fetch: (path, init = {}) =>
      fetch(`${base}${path}`, {
        ...init,
        headers: { ...headers, cookie, ...(init.headers as Record<string, string> | undefined) },
      }),
  };
}

/** The school the notification tests call for (SendNotificationType, SendMarkNotes). */
export const E2E_SCHOOL = 'https://school.example.org/';

/** Registers E2E_SCHOOL as an admin would (once: later calls find it there, a 409). */
export async function registerE2eSchool(api: Api): Promise<void> {
  const res = await api.fetch('/api/schools', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'E2E School', baseUrl: E2E_SCHOOL, topicKey: 'e2e' }),
  });
  if (res.status !== 201 && res.status !== 409)
    throw new Error(`registering the e2e school: ${res.status} ${await res.text()}`);
}
