import type SQLite from 'better-sqlite3';
import {
  type Kysely,
  type KyselyPlugin,
  OperationNodeTransformer,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type PrimitiveValueListNode,
  type QueryResult,
  type RootOperationNode,
  sql,
  type Transaction,
  type UnknownRow,
  type ValueNode,
} from 'kysely';
import type { DialectName } from './migrations.js';
import type { Database } from './schema.js';

/**
 * The transaction primitives that differ between the two databases, each in one function. The
 * other differences stay beside the code they change (docs/architecture.md#the-store lists them);
 * everything else in the store is one Kysely query for both.
 *
 * - SQLite has one connection and one writer: Kysely's SQLite driver serialises every query and
 *   transaction on it with a mutex, and the hot raw statements (the call recorder's group commit)
 *   take the same mutex (`onSqliteConnection`), so they never run inside someone else's
 *   transaction.
 * - PostgreSQL has a pool and concurrent writers, possibly in several processes: what must not
 *   interleave takes an advisory lock (`lockedTransaction`, `exclusively`), and claims skip rows
 *   another instance holds (`FOR UPDATE SKIP LOCKED`, deliveries.ts).
 */
export interface DialectPieces {
  readonly name: DialectName;
  /**
   * Runs `fn` in a transaction that holds, until it ends, a lock on each of `keys` (PostgreSQL:
   * transaction-level advisory locks, taken in sorted order so two such transactions cannot
   * deadlock). SQLite: a plain transaction — its single writer already serialises them.
   */
  lockedTransaction<T>(keys: readonly string[], fn: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
  /**
   * A transaction of the outbox's own bookkeeping (claims, finishes, recovery, expiry). On SQLite
   * with `synchronous = FULL` it commits without waiting for the disk (as NORMAL): the next call's
   * commit, which does wait, makes it durable with everything before it. A power cut can lose at
   * most the bookkeeping since the last call was recorded, and the deliveries it concerned are
   * sent again with the same idempotency key — as after any crash mid-send. It holds the
   * connection, so nothing else commits while it runs. PostgreSQL: a plain transaction.
   */
  outboxTransaction<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
  /**
   * SQLite only: synchronous better-sqlite3 work (prepared statements in its own transaction)
   * committed as outboxTransaction commits, while holding Kysely's connection.
   */
  outboxSync<T>(work: () => T): Promise<T>;
}

export function dialectPieces(
  name: DialectName,
  db: Kysely<Database>,
  sqlite?: { handle: SQLite.Database; synchronous: 'FULL' | 'NORMAL' },
  /** What a failed write says of the database (a full disk): told before it is thrown on. */
  observe: (err: unknown) => void = () => {},
): DialectPieces {
  const full = sqlite?.synchronous === 'FULL' ? sqlite.handle : undefined;
  const relax = full?.prepare('PRAGMA synchronous = NORMAL');
  const restore = full?.prepare('PRAGMA synchronous = FULL');
  return {
    name,
    outboxTransaction(fn) {
      const handle = sqlite?.synchronous === 'FULL' ? sqlite.handle : undefined;
      if (!handle) return db.transaction().execute(fn);
      return db.connection().execute(async (connection) => {
        handle.pragma('synchronous = NORMAL');
        try {
          return await connection.transaction().execute(fn);
        } finally {
          handle.pragma('synchronous = FULL');
        }
      });
    },
    outboxSync(work) {
      if (!sqlite) return Promise.reject(new Error('outboxSync is for SQLite'));
      return db.connection().execute(async () => {
        relax?.run();
        try {
          return work();
        } catch (err) {
          observe(err);
          throw err;
        } finally {
          restore?.run();
        }
      });
    },
    lockedTransaction(keys, fn) {
      return db.transaction().execute(async (trx) => {
        if (name === 'postgres' && keys.length > 0) {
          const sorted = [...new Set(keys)].sort();
          await sql`SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest(${sorted}::text[]) AS k ORDER BY k`.execute(
            trx,
          );
        }
        return fn(trx);
      });
    },
  };
}

/**
 * Runs synchronous better-sqlite3 work while holding Kysely's connection (its mutex), so it cannot
 * land inside a transaction Kysely has open on the same connection.
 */
export function onSqliteConnection<T>(db: Kysely<Database>, work: () => T): Promise<T> {
  return db.connection().execute(async () => work());
}

/** U+0000 → U+FFFD in a string (PostgreSQL's text cannot hold NUL; SQLite's can). */
const withoutNul = (value: unknown): unknown =>
  typeof value === 'string' && value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value;

class NulTransformer extends OperationNodeTransformer {
  protected override transformValue(node: ValueNode): ValueNode {
    const value = withoutNul(node.value);
    return value === node.value ? super.transformValue(node) : { ...node, value };
  }

  protected override transformPrimitiveValueList(node: PrimitiveValueListNode): PrimitiveValueListNode {
    return node.values.some((v) => withoutNul(v) !== v)
      ? { ...node, values: node.values.map(withoutNul) }
      : super.transformPrimitiveValueList(node);
  }
}

/**
 * PostgreSQL refuses a text value holding U+0000 (the whole statement fails), where SQLite keeps
 * it. A request body may hold one, and a call must still be recorded: on PostgreSQL every string
 * a query binds has its NULs replaced by U+FFFD, the character the XML answers already use for
 * what XML cannot carry.
 */
export class NulToReplacementPlugin implements KyselyPlugin {
  readonly #transformer = new NulTransformer();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.#transformer.transformNode(args.node);
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}
