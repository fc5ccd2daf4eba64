import type { Enqueue, NewDelivery } from '../outbox/index.js';
import type { CallRow, NewCall, Store } from '../store/index.js';
import { type CanonicalAnswers, createCanonicalAnswers } from './canonical-answers.js';
import {
  type BatchWriter,
  NULLABLE_DEFAULTS,
  type Pending,
  postgresWriter,
  sqliteWriter,
} from './writers.js';

/** The calls' own write path: every call's record, with the deliveries it queues. */
export interface CallRecorder {
  /**
   * Records a call with its deliveries; resolves with its id once both are committed. Records
   * arriving in the same turn of the event loop are committed together in one unit of work (group
   * commit), so a burst of concurrent requests pays for one commit, not one each.
   */
  record(call: NewCall, deliveries?: readonly NewDelivery[]): Promise<number>;
  /** Waits until every record handed in so far is committed. */
  flush(): Promise<void>;
  /** The answers recorded by reference, and their ids (a call's `response_ref`). */
  readonly answers: CanonicalAnswers;
}

/** Who is told of each commit's calls (History's live tail), and only while it wants them. */
export interface CommitListener {
  wanted(): boolean;
  publish(rows: CallRow[]): void;
}

/**
 * The call recorder: a call's record and its deliveries (the outbox's `enqueue`) in one unit of
 * work of the store, batched by the event loop's turns (writers.ts has each database's commit).
 */
export function createCallRecorder(options: {
  readonly store: Store;
  readonly enqueue: Enqueue;
  /** Told of each commit's calls, once committed. */
  readonly onCommitted?: CommitListener | undefined;
}): CallRecorder {
  const { store, onCommitted } = options;
  const write: BatchWriter =
    store.dialect === 'sqlite'
      ? sqliteWriter(store, options.enqueue)
      : postgresWriter(store, options.enqueue);
  const answers = createCanonicalAnswers(store);
  let queue: Pending[] = [];
  /** Batches being committed: flush waits for them. */
  const committing = new Set<Promise<void>>();

  async function commit(batch: Pending[]): Promise<void> {
    let ids: number[];
    try {
      ids = await write(batch);
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(ids[i] as number);
    if (onCommitted?.wanted()) {
      onCommitted.publish(
        batch.map(({ call }, i) => {
          const row = { ...NULLABLE_DEFAULTS, ...call, id: ids[i] as number };
          // The text of an answer recorded by reference, as History reads it back.
          if (row.response_ref !== null) row.response = answers.textOf(row.response_ref) ?? row.response;
          return row as CallRow;
        }),
      );
    }
  }

  let timer: NodeJS.Immediate | undefined;
  /**
   * SQLite: one batch at a time, from its commit to its answers. What arrives meanwhile joins the
   * next batch, so batches grow with the load: a commit writes every page it touched whatever the
   * rows on it, so SQLite's work per call falls as a batch grows (bench/commit-batch.mjs; its
   * figures in docs/performance.md). It adds little wait: with SQLITE_SYNCHRONOUS=FULL a batch
   * committed meanwhile would wait for the flush under way, then for its own, all the same.
   * PostgreSQL's batches overlap, each on a pooled connection.
   */
  const serial = store.dialect === 'sqlite';
  let writing = false;
  function commitQueued(): void {
    timer = undefined;
    if (queue.length === 0 || (serial && writing)) return;
    const batch = queue;
    queue = [];
    writing = true;
    const done = commit(batch).finally(() => {
      committing.delete(done);
      writing = false;
      if (queue.length > 0) timer ??= setImmediate(commitQueued);
    });
    committing.add(done);
  }

  return {
    answers,
    record(call, items) {
      return new Promise<number>((resolve, reject) => {
        queue.push({ call, deliveries: items, resolve, reject });
        timer ??= setImmediate(commitQueued);
      });
    },
    async flush() {
      while (queue.length > 0 || committing.size > 0) {
        if (timer) clearImmediate(timer);
        commitQueued();
        await Promise.all(committing);
      }
    },
  };
}
