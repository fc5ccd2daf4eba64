import type { Store } from '../store/index.js';
import type { DeliveryStatus } from './schema.js';
import { type OutboxEvent, TRANSITIONS } from './states.js';

/** What each part of the outbox's SQL (sql.ts) works with. */
export interface OutboxSqlContext {
  readonly store: Store;
  readonly db: Store['db'];
  readonly work: Store['work'];
  readonly pg: boolean;
  /** Locks the rows a sweep or claim selects, skipping those another transaction holds (PostgreSQL). */
  skipLocked<Q extends { forUpdate(): Q; skipLocked(): Q }>(qb: Q): Q;
}

export function outboxSqlContext(store: Store): OutboxSqlContext {
  const pg = store.dialect === 'postgres';
  return {
    store,
    db: store.db,
    work: store.work,
    pg,
    skipLocked: (qb) => (pg ? qb.forUpdate().skipLocked() : qb),
  };
}

/** The WHERE condition of an event: the statuses its transition starts from. */
export const from = (event: OutboxEvent) => [...TRANSITIONS[event].from];
export const to = (event: OutboxEvent): DeliveryStatus => TRANSITIONS[event].to;
