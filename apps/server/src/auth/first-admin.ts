import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { hashPassword } from './password.js';
import { sha256 } from './sessions.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The one-time set-up link that makes the first admin, while no staff user exists. */
    readonly firstAdminSetup: FirstAdminSetup;
  }
}

export interface FirstAdminSetup {
  /** Whether a token is the set-up link's, and still valid. */
  checkToken(token: string): boolean;
  /** The set-up URL while it is waiting to be used and valid, for the ready banner to repeat. */
  url(): string | undefined;
  /** Forgets the token once used. */
  close(): void;
}

const SETUP_TOKEN_MS = 3_600_000;

/**
 * The first admin, once the database has been reached (at once, unless the server started
 * without it): made from ADMIN_USERNAME and ADMIN_PASSWORD, or by whoever opens the set-up URL the
 * server logs (valid one hour); none with LOCAL_LOGIN=off, where admins come from single sign-on.
 */
export function setUpFirstAdmin(app: FastifyInstance): void {
  const { config, store } = app;
  let setupToken: { hash: string; until: number; url: string } | undefined;

  app.decorate('firstAdminSetup', {
    checkToken(token: string) {
      if (!setupToken || Date.now() > setupToken.until) return false;
      const a = Buffer.from(sha256(token), 'hex');
      const b = Buffer.from(setupToken.hash, 'hex');
      return timingSafeEqual(a, b);
    },
    url() {
      return setupToken && Date.now() <= setupToken.until ? setupToken.url : undefined;
    },
    close() {
      setupToken = undefined;
    },
  } satisfies FirstAdminSetup);

  async function firstAdmin(): Promise<void> {
    if ((await store.users.count()) > 0) return;
    if (config.LOCAL_LOGIN === 'off') {
      app.log.info(
        'No staff user exists yet: admins are made at their first single sign-on (OIDC_ADMIN_GROUPS).',
      );
      return;
    }
    if (config.ADMIN_USERNAME && config.ADMIN_PASSWORD) {
      const created = await store.users.createFirst({
        username: config.ADMIN_USERNAME,
        display_name: config.ADMIN_USERNAME,
        role: 'admin',
        password_hash: await hashPassword(config.ADMIN_PASSWORD),
      });
      if (created) app.log.info({ username: created.username }, 'first admin created from ADMIN_USERNAME');
      return;
    }
    const token = randomBytes(24).toString('base64url');
    const base =
      config.PUBLIC_BASE_URL ??
      `http://${config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST}:${config.PORT}`;
    const url = `${base}/setup?token=${token}`;
    setupToken = { hash: sha256(token), until: Date.now() + SETUP_TOKEN_MS, url };
    app.log.warn(
      { setupUrl: url },
      'No staff user exists yet. Open the set-up URL within an hour to create the first admin (or set ADMIN_USERNAME and ADMIN_PASSWORD); restart for a new one.',
    );
  }

  app.addHook('onReady', async () => {
    const setUp = store.whenReady(firstAdmin, (err) =>
      app.log.error({ err }, 'could not set up the first admin'),
    );
    // Reached already (the usual case): the admin exists before the server listens.
    if (store.readiness().migrations) await setUp;
  });
}
