// The store's public entry: what the folders above it use of the database (nothing else in store/
// is imported from outside it).
export type { AuditRow, NewAuditEntry } from './audit.js';
export type { Availability, DatabaseStatus } from './availability.js';
export {
  DatabaseUnavailableError,
  isConnectionError,
  isDiskFullError,
  isUnavailableError,
} from './availability.js';
export {
  CALL_ROW_SQL,
  callResponseSql,
  registerCallAnswer,
  responseMatchSql,
  selectCallRow,
} from './call-answers.js';
export type { BookRow, SchoolRepository, SchoolRow, TemplateRow } from './catalog.js';
export { UNIQUE_CONSTRAINTS, type UniqueConstraint, uniqueViolation } from './conflicts.js';
export type { DbOptions, DialectName, OpenedDatabase } from './db.js';
// The database alone, without the store's watch, checkpoints or instance: for `migrate-data`.
export { isPostgresUrl, openDatabase } from './db.js';
export type { LimitCheck, LimitRepository, LimitTake } from './limits.js';
export { columnTypes } from './migrations.js';
export { openStore, type StoreOptions } from './open.js';
export type { KeptRows, TableOwner, TimePartitioned } from './owners.js';
export {
  createPartitions,
  isLockTimeout,
  isPartitionAttachedMeanwhile,
  PARTITION_PERIODS,
  type Partition,
  type PartitionLayout,
  type PartitionPeriod,
  type Partitions,
  periodEnd,
  periodStart,
  type Retired,
} from './partitions.js';
export { announceCallsPart, announcedBy } from './pg-watch.js';
export { prepared, preparedText } from './prepared.js';
export type { ReadReplica, ReplicaState, ReplicaStatus } from './replica.js';
export type {
  Binding,
  CallRow,
  CallSummaryRow,
  CallsTable,
  Database,
  DeliveryStatus,
  NewCall,
  Outcome,
  SessionMethod,
} from './schema.js';
export { CALL_COLUMNS, CALL_SUMMARY_COLUMNS, COPIED_TABLES } from './schema.js';
export { inScope, type SchoolScope, schoolCondition } from './school-scope.js';
export type { SessionWithUser } from './sessions.js';
// The embedded database copied while the server writes, for `pnpm admin backup` (cli/backup.ts).
export * from './sqlite-backup.js';
export { openStaffStore, type StaffStore } from './staff.js';
export { jsonParameter, type StatementPart } from './statement-parts.js';
export type { Store, StoreEvents } from './store.js';
export type { PostgresTx, SqliteTx, UnitOfWork } from './unit-of-work.js';
export { schoolIdsOf, schoolIdsText, type UserRow } from './users.js';
