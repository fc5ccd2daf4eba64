import type { SqliteTx } from '../store/index.js';
import type { Finished, OutboxSql } from './sql.js';

/** Finished attempts that could not be recorded are tried again after this long (or when the database is back). */
const RERECORD_MS = 1000;

/**
 * How long finished attempts wait for a call's durable commit to be recorded in (`recordIn`) before
 * they are committed on their own. Under load a group commit comes every millisecond or two: on
 * PostgreSQL a commit of their own was a transaction, two round trips and a WAL flush more per
 * batch. Idle, the delivery is held this much longer before it shows as settled.
 */
export const COMMIT_WAIT_MS = 10;

/**
 * Deliveries held, each once per attempt of it under way or not yet recorded: a hedged code has
 * two (hedge.ts), and stays held until both are recorded.
 */
export class Holds {
  readonly #count = new Map<number, number>();

  add(id: number): void {
    this.#count.set(id, (this.#count.get(id) ?? 0) + 1);
  }

  /** One of its attempts is recorded (or dropped). */
  delete(id: number): void {
    const left = (this.#count.get(id) ?? 0) - 1;
    if (left > 0) this.#count.set(id, left);
    else this.#count.delete(id);
  }

  has(id: number): boolean {
    return this.#count.has(id);
  }
}

/** A batch recorded in someone else's transaction: tell it how that ended. */
export interface RecordedInCommit {
  committed(): void;
  failed(): void;
}

/**
 * The attempts a dispatcher has finished, recorded together, batch after batch, beside the claims
 * (a claim never waits for them), and the deliveries it holds meanwhile. A batch is recorded in the
 * next call's durable commit (`recordIn` on SQLite, `take` on PostgreSQL, from the outbox's
 * enqueue), or is committed on its own when none comes within COMMIT_WAIT_MS.
 *
 * A batch that cannot be recorded (the database unreachable, the disk full) is kept, in order,
 * and recorded again a second later or as soon as the database is back: its deliveries stay held,
 * so the dispatcher's own sweep never takes them back and none is sent twice for want of a record.
 */
export class FinishedAttempts {
  /** Deliveries held: an attempt under way, or ended and not yet recorded. */
  readonly held = new Holds();
  #waiting: Finished[] = [];
  #recording: Promise<void> | undefined;
  #retry: NodeJS.Timeout | undefined;
  /** Waiting COMMIT_WAIT_MS for a durable commit to be recorded in, until it fires. */
  #commitWait: NodeJS.Timeout | undefined;
  /** Batches in a transaction not known to have ended yet. */
  #inCommits = 0;

  constructor(
    private readonly sql: OutboxSql,
    private readonly hooks: {
      /** A batch was recorded (retries come due at their times). */
      readonly recorded: (batch: readonly Finished[]) => void;
      /** A batch could not be recorded; it is kept. */
      readonly failed: (err: unknown, waiting: number) => void;
      /** Nothing is waiting any more. */
      readonly drained: () => void;
    },
  ) {}

  /** An attempt starts: its delivery is held until its end is recorded. */
  hold(id: number): void {
    this.held.add(id);
  }

  /** An attempt that ended without a result to record (it failed unexpectedly). */
  drop(id: number): void {
    this.held.delete(id);
  }

  /** An attempt ended: recorded with the others waiting. */
  add(finished: Finished): void {
    this.#waiting.push(finished);
    this.#schedule();
  }

  /**
   * Inside a call's durable transaction (SQLite): what waits is written there. The caller says how
   * the transaction ended; if it failed, the batch waits again, ahead of the rest (its updates hold
   * only once: writing it again is harmless).
   */
  recordIn(tx: SqliteTx): RecordedInCommit | undefined {
    const taken = this.take();
    if (!taken) return undefined;
    try {
      this.sql.finishIn(tx, taken.batch);
    } catch (err) {
      taken.recorded.failed();
      throw err;
    }
    return taken.recorded;
  }

  /**
   * What waits, taken to be written in a call's durable commit by the caller (PostgreSQL: in the
   * recorder's one statement, the outbox's part of it, enqueue.ts), which says how that ended; if it
   * failed, the batch waits again, ahead of the rest. Undefined: nothing waits.
   */
  take(): { readonly batch: readonly Finished[]; readonly recorded: RecordedInCommit } | undefined {
    if (this.#waiting.length === 0) return undefined;
    const batch = this.#waiting;
    this.#waiting = [];
    if (this.#commitWait) clearTimeout(this.#commitWait);
    this.#commitWait = undefined;
    this.#inCommits++;
    let ended = false;
    const recorded: RecordedInCommit = {
      committed: () => {
        if (ended) return;
        ended = true;
        this.#inCommits--;
        this.#recorded(batch);
        if (!this.busy) this.hooks.drained();
      },
      failed: () => {
        if (ended) return;
        ended = true;
        this.#inCommits--;
        this.#waiting = batch.concat(this.#waiting);
        this.#schedule();
      },
    };
    return { batch, recorded };
  }

  /** What waits is recorded once COMMIT_WAIT_MS have passed without a durable commit to be recorded in. */
  #schedule(): void {
    if (this.#commitWait || this.#recording || this.#retry || this.#waiting.length === 0) return;
    this.#commitWait = setTimeout(() => {
      this.#commitWait = undefined;
      this.#record();
    }, COMMIT_WAIT_MS);
    this.#commitWait.unref();
  }

  /** Attempts ended and not yet recorded. */
  get waiting(): number {
    return this.#waiting.length;
  }

  get busy(): boolean {
    return this.#recording !== undefined || this.#waiting.length > 0 || this.#inCommits > 0;
  }

  /** Tries what waits at once (the database is back). */
  retryNow(): void {
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#record();
  }

  /** Waits for the recording under way, then tries once more; false when something is left unrecorded. */
  async flush(): Promise<boolean> {
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    if (this.#commitWait) clearTimeout(this.#commitWait);
    this.#commitWait = undefined;
    await this.#recording;
    return this.#recordBatch();
  }

  #record(): void {
    if (this.#commitWait) clearTimeout(this.#commitWait);
    this.#commitWait = undefined;
    if (this.#recording || this.#retry) return;
    this.#recording = (async () => {
      while (this.#waiting.length > 0) {
        if (!(await this.#recordBatch())) return false;
      }
      return true;
    })().then((done) => {
      this.#recording = undefined;
      if (!done) {
        this.#retry = setTimeout(() => this.retryNow(), RERECORD_MS);
        this.#retry.unref();
      } else if (this.#waiting.length > 0) this.#schedule();
      else this.hooks.drained();
    });
  }

  async #recordBatch(): Promise<boolean> {
    if (this.#waiting.length === 0) return true;
    const batch = this.#waiting;
    this.#waiting = [];
    try {
      await this.sql.finish(batch);
    } catch (err) {
      // Kept, ahead of what ended since.
      this.#waiting = batch.concat(this.#waiting);
      this.hooks.failed(err, this.#waiting.length);
      return false;
    }
    this.#recorded(batch);
    return true;
  }

  #recorded(batch: readonly Finished[]): void {
    for (const { claimed } of batch) this.held.delete(claimed.delivery.id);
    this.hooks.recorded(batch);
  }
}
