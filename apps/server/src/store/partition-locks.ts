import { sql, type Transaction } from 'kysely';
import type { Database } from './schema.js';

/**
 * How long a partition's DDL statement waits for its lock before giving up (and being tried
 * again): a DDL statement waiting for a lock makes every query behind it wait too.
 */
export const LOCK_TIMEOUT_MS = 250;

/** Sets LOCK_TIMEOUT_MS for the rest of `trx`. */
export const setLockTimeout = (trx: Transaction<Database>) =>
  sql.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT_MS}ms'`).execute(trx);

/** PostgreSQL's error when a lock was not had within lock_timeout. */
export const isLockTimeout = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '55P03';
