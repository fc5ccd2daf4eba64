import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { type Config, loadConfig } from '../src/config.js';

/** A fresh data folder under the system's temp directory, removed by the returned function. */
export function tempDataDir(): { dir: string; remove: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-messaging-test-'));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export interface TestApp {
  readonly app: FastifyInstance;
  readonly config: Config;
  readonly dataDir: string;
  /** Closes the app and removes its data folder. */
  close(): Promise<void>;
}

/** Builds the real app on a temporary SQLite database; `env` overrides configuration. */
export async function startTestApp(env: Record<string, string> = {}, dataDir?: string): Promise<TestApp> {
  const temp = dataDir ? undefined : tempDataDir();
  const dir = dataDir ?? (temp as { dir: string }).dir;
  const config = loadConfig({
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    SQLITE_SYNCHRONOUS: 'NORMAL',
    // Tests send many codes to one phone from one address; the limits have their own tests.
    AUTHCODE_LIMIT_PER_PHONE: 'off',
    AUTHCODE_LIMIT_PER_IP: 'off',
    ...env,
  });
  const app = await buildApp(config, { logger: false });
  await app.ready();
  return {
    app,
    config,
    dataDir: dir,
    async close() {
      await app.close();
      temp?.remove();
    },
  };
}

/** The newest call record. */
export async function lastCall(app: FastifyInstance) {
  const [row] = await app.store.calls.list({ limit: 1 });
  if (!row) throw new Error('no call recorded');
  return row;
}

/** Registers the school the examples and golden files use (https://school.example.org/). */
export async function registerSchool(
  app: FastifyInstance,
  school: { name?: string; baseUrl?: string; topicKey?: string; allowedIps?: string | null } = {},
) {
  return app.store.schools.create({
    name: school.name ?? 'Example School',
    base_url: school.baseUrl ?? 'https://school.example.org',
    topic_key: school.topicKey ?? 'example',
    allowed_ips: school.allowedIps ?? null,
  });
}
