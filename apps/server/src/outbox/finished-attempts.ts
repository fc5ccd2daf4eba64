import type { Finished, OutboxSql } from './sql.js';

/** Finished attempts that could not be recorded are tried again after this long (or when the database is back). */
const RERECORD_MS = 1000;

/**
 * The attempts a dispatcher has finished, recorded together, batch after batch, beside the claims
 * (a claim never waits for them), and the deliveries it holds meanwhile.
 *
 * A batch that cannot be recorded (the database unreachable, the disk full) is kept, in order,
 * and recorded again a second later or as soon as the database is back: its deliveries stay held,
 * so the dispatcher's own sweep never takes them back and none is sent twice for want of a record.
 */
export class FinishedAttempts {
  /** Deliveries held: an attempt under way, or ended and not yet recorded. */
  readonly held = new Set<number>();
  #waiting: Finished[] = [];
  #recording: Promise<void> | undefined;
  #retry: NodeJS.Timeout | undefined;

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
    this.#record();
  }

  /** Attempts ended and not yet recorded. */
  get waiting(): number {
    return this.#waiting.length;
  }

  get busy(): boolean {
    return this.#recording !== undefined || this.#waiting.length > 0;
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
    await this.#recording;
    return this.#recordBatch();
  }

  #record(): void {
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
      } else if (this.#waiting.length > 0) this.#record();
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
    for (const { claimed } of batch) this.held.delete(claimed.delivery.id);
    this.hooks.recorded(batch);
    return true;
  }
}
