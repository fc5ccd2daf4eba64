import fs from 'node:fs';
import { groups } from '@school/contract';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { logFormat, readyBanner } from './logging.js';
import { createFilesPrivately, modeIfOthersCanRead } from './private-files.js';

/**
 * A stop signal this soon after the first is the same stop passed on, not a second one: Ctrl-C
 * on `pnpm start` reaches the server twice, from the terminal and again from pnpm, which relays
 * it to its script a few milliseconds later. Only a later one means "stop now, do not wait".
 */
const RELAYED_SIGNAL_MS = 1000;

/**
 * The process: configuration, listening, and a graceful shutdown on SIGTERM/SIGINT that exits 0
 * (a clean stop; `pnpm start` then reports no failure).
 */
async function main(): Promise<void> {
  createFilesPrivately();
  // A .env file in the working directory, if any; variables already set win.
  if (fs.existsSync('.env')) process.loadEnvFile('.env');
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  // Handled from the start: a stop asked for while the server is still starting waits for it.
  let stopping: { readonly at: number; readonly signal: NodeJS.Signals } | undefined;
  let stop: ((signal: NodeJS.Signals) => void) | undefined;
  const onStop = (signal: NodeJS.Signals) => {
    if (stopping === undefined) {
      stopping = { at: Date.now(), signal };
      stop?.(signal);
    } else if (Date.now() - stopping.at >= RELAYED_SIGNAL_MS) {
      console.error(`${signal} again: exiting without waiting for the shutdown.`);
      process.exit(1);
    }
  };
  process.on('SIGINT', onStop);
  process.on('SIGTERM', onStop);

  const format = logFormat(config.LOG_FORMAT);
  const sharedMode = modeIfOthersCanRead(config.dataDir);
  let built: FastifyInstance | undefined;
  const app = await buildApp(config, {
    logFormat: format,
    // Found after start and not mended by waiting (credentials refused once the database could
    // be reached): stop, non-zero, as a bad configuration at start does.
    onFatal: () => {
      if (!built) process.exit(1);
      void built.close().finally(() => process.exit(1));
    },
  });
  built = app;
  if (sharedMode) {
    app.log.warn(
      { dataDir: config.dataDir, mode: sharedMode },
      `DATA_DIR is readable by other users of this machine (mode ${sharedMode}): it holds password hashes and phone numbers. Run chmod -R go-rwx on it.`,
    );
  }
  // Errors and other signals close the same way; SIGINT and SIGTERM come through `stop`.
  const grace = closeWithGrace({ delay: 10_000, skip: ['SIGINT', 'SIGTERM'] }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an uncaught error');
    else if (signal) app.log.info({ signal }, 'shutting down');
    const started = Date.now();
    await app.close();
    // The last line, so a person at the terminal knows the stop is over (close() has answered the
    // requests under way and committed or reported what was recorded).
    app.log.info(`stopped: closing took ${Date.now() - started} ms`);
  });
  stop = (signal) => {
    app.log.info({ signal }, 'shutting down');
    void grace.close();
  };
  if (stopping) return stop(stopping.signal);
  await app.listen({ port: config.PORT, host: config.HOST });
  app.log.info({ dataDir: config.dataDir, namespace: config.SERVICE_NAMESPACE }, 'ready');
  if (format === 'pretty') {
    const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST;
    const baseUrl =
      config.PUBLIC_BASE_URL ?? `http://${host.includes(':') ? `[${host}]` : host}:${config.PORT}`;
    const setupUrl = app.firstAdminSetup.url();
    process.stdout.write(
      `${readyBanner({ baseUrl, services: groups, dataDir: config.dataDir, setupUrl })}\n`,
    );
  }
}

main().catch((err: unknown) => {
  console.error('Failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
