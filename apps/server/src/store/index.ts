import type { Kysely } from 'kysely';
import { type CallRepository, createCallRepository } from './calls.js';
import {
  type BookRepository,
  createBookRepository,
  createSchoolRepository,
  createTemplateRepository,
  type SchoolRepository,
  type TemplateRepository,
} from './catalog.js';
import { type DbOptions, openDatabase } from './db.js';
import { createDeliveryRepository, type DeliveryRepository } from './deliveries.js';
import type { Database } from './schema.js';
import {
  type AuditRepository,
  createAuditRepository,
  createSessionRepository,
  createUserRepository,
  type SessionRepository,
  type UserRepository,
} from './users.js';

export type {
  CallCursor,
  CallQuery,
  CallRow,
  CallSummaryRow,
  NewCall,
  StatsRow,
  TextSearchPage,
} from './calls.js';
export type { BookRow, SchoolRow, TemplateRow } from './catalog.js';
export type {
  AttemptResult,
  AttemptRow,
  Claimed,
  DeliveryPayload,
  DeliveryRow,
  NewDelivery,
  PushPayload,
  SmsPayload,
} from './deliveries.js';
export { deliveryPayloadJson, parseDeliveryPayload } from './deliveries.js';
export type { AttemptOutcome, Binding, DeliveryKind, DeliveryStatus, Outcome } from './schema.js';
export { SearchBusyError, SearchClosedError } from './search.js';
export type { AuditRow, NewAuditEntry, SessionWithUser, UserRow } from './users.js';

/** The store: the database and the repositories over it. */
export interface Store {
  readonly db: Kysely<Database>;
  readonly calls: CallRepository;
  readonly deliveries: DeliveryRepository;
  readonly schools: SchoolRepository;
  readonly templates: TemplateRepository;
  readonly books: BookRepository;
  readonly users: UserRepository;
  readonly sessions: SessionRepository;
  readonly audit: AuditRepository;
  /** Cheap round trip, for health checks. */
  ping(): Promise<void>;
  /** Commits what is pending and closes the database. */
  close(): Promise<void>;
}

export async function openStore(options: DbOptions): Promise<Store> {
  const { db, sqlite } = await openDatabase(options);
  const deliveries = createDeliveryRepository(db, sqlite);
  const calls = createCallRepository(db, sqlite, deliveries);
  return {
    db,
    calls,
    deliveries,
    schools: createSchoolRepository(db),
    templates: createTemplateRepository(db),
    books: createBookRepository(db),
    users: createUserRepository(db),
    sessions: createSessionRepository(db),
    audit: createAuditRepository(db),
    async ping() {
      await db.selectFrom('calls').select('id').limit(1).execute();
    },
    async close() {
      await calls.flush();
      await calls.close();
      await db.destroy();
    },
  };
}
