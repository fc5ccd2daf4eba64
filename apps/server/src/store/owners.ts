import type { Migration } from 'kysely';
import type { DialectName } from './dialect.js';

/**
 * A folder above the store that owns tables of its own (the outbox: outbox/migrations.ts). The
 * store stays the bottom layer and imports none of them: whoever opens the database hands it
 * their owners, and it runs their migrations and keeps their time partitions with its own.
 */
export interface TableOwner {
  /**
   * Its part of the database's migrations, by migration id: one sequence for the whole database
   * (store/migrations.ts), so a migration may have parts of several owners (0003 made the outbox's
   * tables and the store's together). An owner's part runs before the store's part of the same id.
   */
  migrations(dialect: DialectName): Readonly<Record<string, Migration>>;
  /** PostgreSQL: its tables partitioned by time (store/partitions.ts, migration 0018). */
  readonly partitioned: readonly TimePartitioned[];
  /**
   * What retiring a period of partitions keeps, of its tables or of others' (store/partitions.ts):
   * the rows still needed go back into their table instead of being dropped with the period.
   */
  readonly kept: readonly KeptRows[];
}

/** A table partitioned by range of the time each row was written, on PostgreSQL. */
export interface TimePartitioned {
  readonly table: string;
  /** The column of its time (epoch ms). */
  readonly column: string;
}

/** The rows of a retired period of `table` that go back into it rather than being dropped. */
export interface KeptRows {
  readonly table: string;
  /** An SQL condition over the retired partition's rows (its own columns; other tables by name). */
  readonly where: string;
  /**
   * Put back in the same statement that detaches the period, so that none is ever missing from
   * the table; these are the rows a retirement counts (`Retired.moved`). Otherwise put
   * back once every table's period is detached, before the period is dropped.
   */
  readonly withDetach?: boolean;
}
