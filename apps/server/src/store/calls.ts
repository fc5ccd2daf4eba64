import type { Insertable, Kysely, Selectable } from 'kysely';
import type { CallsTable, Database } from './schema.js';

export type NewCall = Insertable<CallsTable>;
export type CallRow = Selectable<CallsTable>;

export interface CallRepository {
  /**
   * Records a call; resolves with its id once the record is committed. Records arriving in the
   * same turn of the event loop are committed together in one transaction (group commit), so a
   * burst of concurrent requests pays for one commit, not one each.
   */
  record(call: NewCall): Promise<number>;
  findById(id: number): Promise<CallRow | undefined>;
  /** Newest first. */
  list(options: { limit: number }): Promise<CallRow[]>;
  count(): Promise<number>;
  /** Waits until every record handed in so far is committed. */
  flush(): Promise<void>;
}

// SQLite allows 32766 bound variables per statement; 16 columns a row.
const ROWS_PER_STATEMENT = 500;

interface Pending {
  readonly call: NewCall;
  readonly resolve: (id: number) => void;
  readonly reject: (err: unknown) => void;
}

export function createCallRepository(db: Kysely<Database>): CallRepository {
  let queue: Pending[] = [];

  async function commit(batch: Pending[]): Promise<void> {
    try {
      const ids = await db.transaction().execute(async (trx) => {
        const all: number[] = [];
        for (let i = 0; i < batch.length; i += ROWS_PER_STATEMENT) {
          const rows = batch.slice(i, i + ROWS_PER_STATEMENT).map((p) => p.call);
          const inserted = await trx.insertInto('calls').values(rows).returning('id').execute();
          // Ids are assigned in VALUES order; RETURNING's order is not promised, so sort.
          all.push(...inserted.map((r) => Number(r.id)).sort((a, b) => a - b));
        }
        return all;
      });
      for (const [i, p] of batch.entries()) p.resolve(ids[i] as number);
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }

  let timer: NodeJS.Immediate | undefined;
  const inflight = new Set<Promise<void>>();

  function schedule(): void {
    timer ??= setImmediate(() => {
      timer = undefined;
      const batch = queue;
      queue = [];
      const done = commit(batch);
      inflight.add(done);
      void done.finally(() => inflight.delete(done));
    });
  }

  return {
    record(call) {
      return new Promise<number>((resolve, reject) => {
        queue.push({ call, resolve, reject });
        schedule();
      });
    },
    async flush() {
      while (timer || inflight.size > 0) {
        if (timer) await new Promise<void>((resolve) => setImmediate(resolve));
        await Promise.all(inflight);
      }
    },
    findById(id) {
      return db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirst();
    },
    list({ limit }) {
      return db.selectFrom('calls').selectAll().orderBy('id', 'desc').limit(limit).execute();
    },
    async count() {
      const row = await db
        .selectFrom('calls')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}
