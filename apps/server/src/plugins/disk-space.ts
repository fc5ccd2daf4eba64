import fs from 'node:fs';
import fp from 'fastify-plugin';
import { isPostgresUrl } from '../store/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Free space in DATA_DIR: whether raw bodies are still stored, and whether calls are taken. */
    readonly diskSpace: DiskSpace;
  }
}

export interface DiskStatus {
  /** Free bytes in DATA_DIR at the last check; null when unknown (not checked: PostgreSQL). */
  readonly freeBytes: number | null;
  /** Below this, call records keep their summaries but not their raw bodies (MIN_FREE_DISK_MB). */
  readonly minFreeBytes: number;
  /** Below this, new calls are refused before anything is written (REFUSE_FREE_DISK_MB). */
  readonly refuseFreeBytes: number;
  readonly rawBodiesStored: boolean;
  /** New calls are refused: the space left is the outbox's reserve. */
  readonly refusingCalls: boolean;
}

export interface DiskSpace {
  /** Bytes of raw request and response a call record may keep now: 0 when space is low. */
  recordBytes(): number;
  /** Whether new calls are refused now (free space below REFUSE_FREE_DISK_MB). */
  refusing(): boolean;
  /** Checks the free space now (a write found the disk full), without waiting for the next check. */
  checkNow(): void;
  status(): DiskStatus;
}

/** Free space is read this often (and at once when a write finds the disk full). */
export const DISK_CHECK_MS = 5000;
/** While calls are refused, the log says so again at most this often. */
const REFUSING_LOG_MS = 60_000;

/**
 * The disk under DATA_DIR (SQLite's database and the book files), read every 5 s
 * (docs/monitoring.md#faults). Two thresholds: below MIN_FREE_DISK_MB call records keep their
 * summaries but not their raw bodies; below REFUSE_FREE_DISK_MB new calls (the .asmx operations
 * and the console's Send) are refused with 503 before anything is written, so the space left
 * keeps the outbox's own bookkeeping working: what was accepted is still sent, and each attempt
 * still recorded. On PostgreSQL the history is not on this disk, and nothing is checked.
 */
export const diskSpacePlugin = fp(
  async (app) => {
    const { config } = app;
    const minFree = config.MIN_FREE_DISK_MB * 1024 * 1024;
    const refuseFree = config.REFUSE_FREE_DISK_MB * 1024 * 1024;
    const watched = !isPostgresUrl(config.DATABASE_URL);
    let freeBytes: number | null = null;
    let checking: Promise<void> | undefined;
    let lastRefusingLog = 0;

    const low = () => freeBytes !== null && freeBytes < minFree;
    const refusing = () => freeBytes !== null && freeBytes < refuseFree;

    const read = async () => {
      try {
        const stats = await fs.promises.statfs(config.dataDir);
        const free = stats.bavail * stats.bsize;
        const wasLow = low();
        const wasRefusing = refusing();
        freeBytes = free;
        if (low() && !wasLow) {
          app.log.warn(
            { freeBytes: free, minFreeBytes: minFree },
            'free disk space is low: call records no longer keep raw bodies (MIN_FREE_DISK_MB)',
          );
        } else if (!low() && wasLow) {
          app.log.info({ freeBytes: free }, 'free disk space is back: call records keep raw bodies again');
        }
        const now = Date.now();
        if (refusing() && (!wasRefusing || now - lastRefusingLog >= REFUSING_LOG_MS)) {
          app.log.warn(
            { freeBytes: free, refuseFreeBytes: refuseFree },
            'the disk is nearly full: new calls are refused with 503 until space is freed (REFUSE_FREE_DISK_MB)',
          );
          lastRefusingLog = now;
        } else if (!refusing() && wasRefusing) {
          app.log.info({ freeBytes: free }, 'free disk space is back: calls are taken again');
          lastRefusingLog = 0;
        }
      } catch (err) {
        app.log.error({ err }, 'could not read the free disk space');
      }
    };
    const check = (): Promise<void> => {
      checking ??= read().finally(() => {
        checking = undefined;
      });
      return checking;
    };

    let timer: NodeJS.Timeout | undefined;
    if (watched) {
      // Created here, as the store would: the first check reads the disk it will write to.
      await fs.promises.mkdir(config.dataDir, { recursive: true });
      await check();
      timer = setInterval(check, DISK_CHECK_MS);
      timer.unref();
    }
    app.addHook('onClose', async () => clearInterval(timer));
    app.decorate('diskSpace', {
      recordBytes: () => (low() ? 0 : config.RECORD_MAX_BYTES),
      refusing,
      checkNow() {
        if (watched) void check();
      },
      status: () => ({
        freeBytes,
        minFreeBytes: minFree,
        refuseFreeBytes: refuseFree,
        rawBodiesStored: !low(),
        refusingCalls: refusing(),
      }),
    });
  },
  { name: 'disk-space', dependencies: ['config'] },
);
