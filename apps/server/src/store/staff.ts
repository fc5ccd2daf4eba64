import { type AuditRepository, createAuditRepository } from './audit.js';
import { createSchoolRepository, type SchoolRepository } from './catalog.js';
import { type DbOptions, type DialectName, openDatabase } from './db.js';
import { createSessionRepository, type SessionRepository } from './sessions.js';
import { createUnitOfWork } from './unit-of-work.js';
import { createUserRepository, type UserRepository } from './users.js';

// The second way in: the staff accounts alone, for the operator's command line (cli/admin.ts).

/** The staff accounts alone: what the operator's command line (cli/admin.ts) changes. */
export interface StaffStore {
  readonly dialect: DialectName;
  readonly users: UserRepository;
  readonly sessions: SessionRepository;
  readonly audit: AuditRepository;
  /** The schools, read only: whose ids a user may be limited to, and their names. */
  readonly schools: Pick<SchoolRepository, 'list' | 'namesOf'>;
  close(): Promise<void>;
}

/**
 * Opens the database for the staff accounts only, beside a server that may be running on it: no
 * checkpointer, no watch connection, no instance announced, no outbox. Rejects when PostgreSQL
 * cannot be reached within `waitMs` (a command should say so, not wait for ever).
 */
export async function openStaffStore(options: DbOptions & { readonly waitMs: number }): Promise<StaffStore> {
  const opened = await openDatabase({ ...options, poolSize: 2 });
  const { db } = opened;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      opened.ready,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the database could not be reached within ${options.waitMs / 1000} s`)),
          options.waitMs,
        );
      }),
    ]);
  } catch (err) {
    if (opened.dialect === 'postgres') opened.stopStarting();
    await db.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  const work = createUnitOfWork(
    opened.dialect,
    db,
    opened.dialect === 'sqlite' ? { handle: opened.sqlite, synchronous: opened.synchronous } : undefined,
  );
  const schools = createSchoolRepository(db);
  return {
    dialect: opened.dialect,
    users: createUserRepository(db, work),
    sessions: createSessionRepository(db),
    audit: createAuditRepository(db),
    schools: { list: schools.list, namesOf: schools.namesOf },
    close: () => db.destroy(),
  };
}
