import type { Role } from '@school/contract';
import { type Kysely, type Selectable, sql } from 'kysely';
import type { Database, SessionsTable } from './schema.js';

export type SessionRow = Selectable<SessionsTable>;

/** A session with the user it belongs to, as every authenticated request needs it. */
export interface SessionWithUser extends SessionRow {
  readonly username: string;
  readonly display_name: string;
  readonly role: Role;
  readonly disabled: number;
  /** The user has a second factor set up. */
  readonly has_totp: number;
  /** The user's schools, read fresh with every session (users.ts, schoolIdsOf). */
  readonly school_ids: string | null;
}

/** Server-side sessions, keyed by the SHA-256 of their token. */
export function createSessionRepository(db: Kysely<Database>) {
  return {
    async create(session: SessionRow): Promise<void> {
      await db.insertInto('sessions').values(session).execute();
    },
    find: (id: string): Promise<SessionWithUser | undefined> =>
      db
        .selectFrom('sessions')
        .innerJoin('users', 'users.id', 'sessions.user_id')
        .selectAll('sessions')
        .select(['users.username', 'users.display_name', 'users.role', 'users.disabled', 'users.school_ids'])
        .select(sql<number>`CASE WHEN users.totp_secret IS NULL THEN 0 ELSE 1 END`.as('has_totp'))
        .where('sessions.id', '=', id)
        .executeTakeFirst(),
    async touch(id: string, at: number): Promise<void> {
      await db.updateTable('sessions').set({ last_seen_at: at }).where('id', '=', id).execute();
    },
    async remove(id: string): Promise<void> {
      await db.deleteFrom('sessions').where('id', '=', id).execute();
    },
    /** Ends every session of a user, but `keep` if given. */
    async removeForUser(userId: number, keep?: string): Promise<number> {
      let query = db.deleteFrom('sessions').where('user_id', '=', userId);
      if (keep !== undefined) query = query.where('id', '!=', keep);
      const result = await query.executeTakeFirst();
      return Number(result.numDeletedRows);
    },
    /** Deletes sessions past their absolute end or idle since before `idleSince`. */
    async removeExpired(now: number, idleSince: number): Promise<number> {
      const result = await db
        .deleteFrom('sessions')
        .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', idleSince)]))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type SessionRepository = ReturnType<typeof createSessionRepository>;
