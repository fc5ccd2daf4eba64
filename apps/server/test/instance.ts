import { createHistory, type History } from '../src/history/index.js';
import { createOutbox, OUTBOX_TABLES, type Outbox } from '../src/outbox/index.js';
import { createLogPushProvider, createLogSmsProvider } from '../src/providers/log.js';
import { type CallRecorder, createCallRecorder } from '../src/recording/recorder.js';
import { openStore, type Store, type StoreOptions } from '../src/store/index.js';
import { testSealer } from './helpers.js';

/**
 * What one server instance puts on its database, without Fastify: the store, the outbox on it,
 * History, and the call recorder that writes a call with its deliveries. The outbox is not started
 * (no dispatcher sends), so a call's deliveries are queued `pending`, their texts sealed with
 * testSealer; a test claims and finishes them itself.
 */
export interface TestInstance {
  readonly store: Store;
  readonly outbox: Outbox;
  readonly history: History;
  readonly recorder: CallRecorder;
  /** Commits what is pending and closes all of it. */
  close(): Promise<void>;
}

/** A logger that says nothing (the outbox's log). */
const SILENT = {
  level: 'silent',
  fatal() {},
  error() {},
  warn() {},
  info() {},
  debug() {},
  trace() {},
  silent() {},
  child() {
    return SILENT;
  },
} as unknown as Parameters<typeof createOutbox>[0]['log'];

/** The store's options; the tables' owners are the server's (the outbox's, plugins/store.ts). */
export async function openTestInstance(options: Omit<StoreOptions, 'owners'>): Promise<TestInstance> {
  const store = await openStore({ ...options, owners: [OUTBOX_TABLES] });
  const outbox = createOutbox({
    store,
    sms: createLogSmsProvider(),
    push: createLogPushProvider(),
    limits: { sms: { concurrency: 8, perSecond: null }, push: { concurrency: 8, perSecond: null } },
    sealer: testSealer(),
    maxAttempts: 5,
    retryBaseMs: 1000,
    retryMaxMs: 60_000,
    pollMs: 1000,
    leaseMs: 30_000,
    log: SILENT,
  });
  const history = createHistory(store);
  const recorder = createCallRecorder({ store, enqueue: outbox.enqueue, onCommitted: history.live });
  return {
    store,
    outbox,
    history,
    recorder,
    async close() {
      await recorder.flush();
      await history.close();
      await store.close();
    },
  };
}
