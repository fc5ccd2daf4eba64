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
  /** New calls are refused: the space left is the outbox's reserve, or a write found the disk full. */
  readonly refusingCalls: boolean;
  /**
   * A write found the disk full (SQLITE_FULL, ENOSPC): calls are refused, whatever the thresholds,
   * until FULL_MARGIN_MB more than was free then is free again, or FULL_HOLD_MS have passed.
   */
  readonly full: boolean;
}

export interface DiskSpace {
  /** Bytes of raw request and response a call record may keep now: 0 when space is low. */
  recordBytes(): number;
  /** Whether new calls are refused now (free space below REFUSE_FREE_DISK_MB). */
  refusing(): boolean;
  /** Reads the free space now, without waiting for the next check. */
  checkNow(): void;
  /**
   * A write found the disk full: calls are refused from now on, whatever the thresholds, and the
   * free space is read at once.
   */
  writeFoundFull(): void;
  status(): DiskStatus;
}

/**
 * Free space is read this often (and at once when a write finds the disk full): at full load
 * SQLite's files grow by far less in a second than REFUSE_FREE_DISK_MB's 64 MB.
 */
export const DISK_CHECK_MS = 1000;
/**
 * After a write found the disk full, calls are taken again once this much more is free, or after
 * FULL_HOLD_MS (a limit the free space does not show, such as a quota: the next write tells).
 */
export const FULL_MARGIN_MB = 16;
export const FULL_HOLD_MS = 30_000;
/** While calls are refused, the log says so again at most this often. */
const REFUSING_LOG_MS = 60_000;

/**
 * The disk under DATA_DIR (SQLite's database and the book files), read every second
 * (docs/monitoring.md#faults). Two thresholds: below MIN_FREE_DISK_MB call records keep their
 * summaries but not their raw bodies; below REFUSE_FREE_DISK_MB new calls (the .asmx operations
 * and the console's Send) are refused before anything is written (answers.ts answerUnavailable: a
 * SOAP call gets a 500 fault, an HTTP GET/POST one a 503), so the space left
 * keeps the outbox's own bookkeeping working: what was accepted is still sent, and each attempt
 * still recorded. A write that finds the disk full refuses calls at once, whatever the
 * thresholds (even 0), until FULL_MARGIN_MB more is free than was then (or FULL_HOLD_MS have
 * passed: the next write tells again). On PostgreSQL the
 * history is not on this disk, and nothing is checked.
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
    /** A write found the disk full: calls are refused until this much is free (bytes)… */
    let fullUntilFree: number | null = null;
    /** …or until then (epoch ms). */
    let fullUntil = 0;
    /** A write found it full since the last check: the next one sets `fullUntilFree`. */
    let foundFull = false;

    const low = () => freeBytes !== null && freeBytes < minFree;
    const full = () => {
      if (fullUntilFree !== null && Date.now() >= fullUntil) fullUntilFree = null;
      return fullUntilFree !== null;
    };
    const refusing = () => full() || (freeBytes !== null && freeBytes < refuseFree);

    const read = async () => {
      try {
        const stats = await fs.promises.statfs(config.dataDir);
        const free = stats.bavail * stats.bsize;
        const wasLow = low();
        const wasRefusing = refusing();
        freeBytes = free;
        if (foundFull) {
          foundFull = false;
          fullUntilFree = Math.max(fullUntilFree ?? 0, free + FULL_MARGIN_MB * 1024 * 1024);
          fullUntil = Date.now() + FULL_HOLD_MS;
          app.log.warn(
            { freeBytes: free, untilFreeBytes: fullUntilFree },
            'a write found the disk full: new calls are refused (SOAP: a 500 fault; HTTP GET/POST: 503; with Retry-After) until space is freed',
          );
          lastRefusingLog = Date.now();
        } else if (fullUntilFree !== null && free >= fullUntilFree) fullUntilFree = null;
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
            'the disk is nearly full: new calls are refused (SOAP: a 500 fault; HTTP GET/POST: 503; with Retry-After) until space is freed (REFUSE_FREE_DISK_MB)',
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
      writeFoundFull() {
        if (!watched) return;
        foundFull = true;
        // A check under way may have read the disk before the write failed: one more after it.
        void check().then(() => (foundFull ? check() : undefined));
      },
      status: () => ({
        freeBytes,
        minFreeBytes: minFree,
        refuseFreeBytes: refuseFree,
        rawBodiesStored: !low(),
        refusingCalls: refusing(),
        full: full() || foundFull,
      }),
    });
  },
  { name: 'disk-space', dependencies: ['config'] },
);
