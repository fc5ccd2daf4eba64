import type { AuditAction } from '@school/contract';
import type { Kysely, Selectable } from 'kysely';
import type { AuditTable, Database } from './schema.js';

export type AuditRow = Selectable<AuditTable>;

export interface AuditQuery {
  /** The entries of one user's own actions (by their id). */
  readonly userId?: number | undefined;
  readonly username?: string | undefined;
  readonly action?: AuditAction | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
}

export interface NewAuditEntry {
  readonly userId: number | null;
  readonly username: string | null;
  readonly ip: string;
  readonly action: AuditAction;
  readonly target?: string | null;
  readonly details?: Readonly<Record<string, unknown>> | null;
}

/** What staff did in the console, newest first. */
export function createAuditRepository(db: Kysely<Database>) {
  return {
    async add(entry: NewAuditEntry): Promise<void> {
      await db
        .insertInto('audit')
        .values({
          at: Date.now(),
          user_id: entry.userId,
          username: entry.username?.slice(0, 64) ?? null,
          ip: entry.ip,
          action: entry.action,
          target: entry.target ?? null,
          details: entry.details ? JSON.stringify(entry.details) : null,
        })
        .execute();
    },
    /** Newest first, keyset on (at, id) after `before` (the id of the last row of the previous page). */
    async search(
      query: AuditQuery,
      page: { limit: number; before?: number | undefined },
    ): Promise<AuditRow[]> {
      let qb = db.selectFrom('audit').selectAll();
      if (query.userId !== undefined) qb = qb.where('user_id', '=', query.userId);
      if (query.username !== undefined) qb = qb.where('username', '=', query.username.toLowerCase());
      if (query.action !== undefined) qb = qb.where('action', '=', query.action);
      if (query.from !== undefined) qb = qb.where('at', '>=', query.from);
      if (query.to !== undefined) qb = qb.where('at', '<', query.to);
      if (page.before !== undefined) {
        const last = await db
          .selectFrom('audit')
          .select(['at', 'id'])
          .where('id', '=', page.before)
          .executeTakeFirst();
        if (!last) return [];
        qb = qb.where((eb) => eb(eb.refTuple('at', 'id'), '<', eb.tuple(last.at, last.id)));
      }
      return qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(page.limit).execute();
    },
    async deleteOlderThan(before: number): Promise<number> {
      const result = await db.deleteFrom('audit').where('at', '<', before).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type AuditRepository = ReturnType<typeof createAuditRepository>;
