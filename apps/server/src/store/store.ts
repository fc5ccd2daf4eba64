import type { EventEmitter } from 'node:events';
import type SQLite from 'better-sqlite3';
import type { Kysely, PostgresPool } from 'kysely';
import type { AuditRepository } from './audit.js';
import type { Availability, DatabaseStatus } from './availability.js';
import type { BookRepository, SchoolRepository, TemplateRepository } from './catalog.js';
import type { DialectName } from './db.js';
import type { LimitRepository } from './limits.js';
import type { Partitions } from './partitions.js';
import type { ReadReplica } from './replica.js';
import type { Database } from './schema.js';
import type { SessionRepository } from './sessions.js';
import type { UnitOfWork } from './unit-of-work.js';
import type { UserRepository } from './users.js';

/** What the store tells of the database's changes that it did not make itself. */
export interface StoreEvents {
  /**
   * Calls another instance committed (PostgreSQL, from the watch connection), and whether some of
   * them queued deliveries.
   */
  callsFromOtherInstances: [ids: readonly number[], queued: boolean];
}

/** The store: the database and the repositories over it. */
export interface Store {
  /** Which database: the embedded SQLite file, or PostgreSQL shared by several instances. */
  readonly dialect: DialectName;
  readonly db: Kysely<Database>;
  /**
   * Reads that may be a little behind (at most DATABASE_READ_MAX_LAG): History's lists, search,
   * counts, exports and call pages (history/calls.ts, which asks `db` for a call page the replica
   * does not have yet), and the Dashboard's statistics (routes/api/stats.ts). On the replica
   * while it is `ok` (store/replica.ts), else on the primary; without DATABASE_READ_URL this is
   * `db`. Everything that writes, or must see what was just written, uses `db`: the call
   * recorder, the outbox and every delivery state (the lists' too), sessions, limits, the audit,
   * users, schools, books and templates, the live tail, the roll-ups and retention.
   * Single statements only, never a transaction: a read the replica fails is run again on the
   * primary, and consecutive reads may be served by either.
   */
  readonly reads: Kysely<Database>;
  /**
   * PostgreSQL's time partitions of calls, deliveries and attempts: made ahead, retired whole
   * (store/partitions.ts); undefined on SQLite, whose tables are single.
   */
  readonly partitions: Partitions | undefined;
  /** The read replica (DATABASE_READ_URL) and its state; undefined without one. */
  readonly replica: ReadReplica | undefined;
  /** SQLite's handle, for the statements a module prepares once (the call recorder's, the outbox's). */
  readonly sqlite: SQLite.Database | undefined;
  /**
   * PostgreSQL: the pool under `reads` (the replica's connections while it is `ok`, else the
   * primary's), for what Kysely cannot do: reading a result row by row as it arrives, the rows kept
   * by nothing (history/calls.ts `scanRows`, the exports). A read here is not run again on the
   * primary if the replica fails it: the export ends with the error.
   */
  readonly readPool: PostgresPool | undefined;
  /** Transactions: durable, relaxed, locked, and SQLite's synchronous forms (unit-of-work.ts). */
  readonly work: UnitOfWork;
  /** Changes made by other instances (StoreEvents). */
  readonly events: EventEmitter<StoreEvents>;
  readonly schools: SchoolRepository;
  readonly templates: TemplateRepository;
  readonly books: BookRepository;
  readonly users: UserRepository;
  readonly sessions: SessionRepository;
  readonly audit: AuditRepository;
  /** Limits shared by every instance (PostgreSQL; SQLite keeps its limits in the one process). */
  readonly limits: LimitRepository;
  /**
   * This process's id among the instances sharing the database. On PostgreSQL it announces itself
   * every second (the `instances` table, by the database's clock), so the others can tell when it is
   * gone (docs/outbox.md).
   */
  readonly instance: string;
  /** Forgets instances (PostgreSQL) silent since before `before` (epoch ms, the database's clock). */
  forgetInstances(before: number): Promise<number>;
  /** Cheap round trip, for health checks. */
  ping(): Promise<void>;
  /**
   * Whether the database can be used now (PostgreSQL: reached and migrated, watched every second;
   * SQLite: always, once open). Queries fail at once with DatabaseUnavailableError while it is not.
   */
  readonly availability: Availability;
  /** Whether the database answers and every migration this build knows is applied (for /readyz). */
  readiness(): { database: boolean; migrations: boolean; status: DatabaseStatus };
  /**
   * Runs `job` once the database has been reached and migrated: now, when it has (the usual
   * case, and always on SQLite), else as soon as it is. What fails is given to `onError`.
   */
  whenReady(job: () => Promise<void> | void, onError: (err: unknown) => void): Promise<void>;
  /**
   * Runs `job` unless another instance is running the same one (a PostgreSQL session advisory
   * lock, held while it runs); on SQLite there is no other instance. Answers whether it ran.
   */
  exclusively(name: string, job: () => Promise<void>): Promise<boolean>;
  /**
   * Runs `job` once no other job of the same name runs, on any instance (PostgreSQL: a session
   * advisory lock, waited for; SQLite: in this process). For what must not interleave across
   * several statements and a file or stream, e.g. a book upload and a book deletion sharing bytes.
   */
  serially<T>(name: string, job: () => Promise<T>): Promise<T>;
  /** Closes the database (what writes to it has finished first: the plugins close in reverse). */
  close(): Promise<void>;
}
