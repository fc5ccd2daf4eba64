import type SQLite from 'better-sqlite3';
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

const COLUMNS = [
  'at',
  'group_name',
  'operation',
  'binding',
  'caller_ip',
  'user_agent',
  'params',
  'outcome',
  'status',
  'error',
  'duration_ms',
  'request',
  'request_bytes',
  'response',
  'response_bytes',
] as const satisfies readonly (keyof NewCall)[];

interface Pending {
  readonly call: NewCall;
  readonly resolve: (id: number) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * The call repository on SQLite. The insert, the hot statement of every request, is prepared once
 * and run on better-sqlite3 directly, one transaction per batch; reads go through Kysely.
 */
export function createCallRepository(db: Kysely<Database>, sqlite: SQLite.Database): CallRepository {
  let queue: Pending[] = [];
  const insert = sqlite.prepare(
    `INSERT INTO calls (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})`,
  );
  const insertAll = sqlite.transaction((calls: readonly NewCall[]) =>
    calls.map((call) => Number(insert.run(call).lastInsertRowid)),
  );

  function commit(batch: Pending[]): void {
    try {
      const ids = insertAll(batch.map((p) => p.call));
      for (const [i, p] of batch.entries()) p.resolve(ids[i] as number);
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }

  let timer: NodeJS.Immediate | undefined;
  function commitQueued(): void {
    timer = undefined;
    const batch = queue;
    queue = [];
    commit(batch);
  }

  return {
    record(call) {
      return new Promise<number>((resolve, reject) => {
        queue.push({ call, resolve, reject });
        timer ??= setImmediate(commitQueued);
      });
    },
    async flush() {
      if (timer) {
        clearImmediate(timer);
        commitQueued();
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
