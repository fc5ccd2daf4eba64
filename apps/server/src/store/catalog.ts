import { templateTypeKey } from '@school/contract';
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { BooksTable, Database, SchoolsTable, TemplatesTable } from './schema.js';

export type SchoolRow = Selectable<SchoolsTable>;
export type TemplateRow = Selectable<TemplatesTable>;
export type BookRow = Selectable<BooksTable>;

/** The registry of schools, templates and books the operations use; plain single statements. */
export function createSchoolRepository(db: Kysely<Database>) {
  /** Told after this process changed a school (another instance's changes it does not see). */
  const listeners = new Set<() => void>();
  const changed = <T>(result: T): T => {
    for (const listener of listeners) listener();
    return result;
  };
  return {
    /**
     * Calls `listener` after every change this process makes to the schools (operations/
     * school-directory.ts keeps a copy); answers a function that stops it.
     */
    onChange(listener: () => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    list: () => db.selectFrom('schools').selectAll().orderBy('name').execute(),
    /** The names of the schools with these ids, by id; a school deleted since is not there. */
    async namesOf(ids: Iterable<number>): Promise<Map<number, string>> {
      const wanted = [...new Set(ids)];
      if (wanted.length === 0) return new Map();
      const rows = await db.selectFrom('schools').select(['id', 'name']).where('id', 'in', wanted).execute();
      return new Map(rows.map((r) => [r.id, r.name]));
    },
    findById: (id: number) => db.selectFrom('schools').selectAll().where('id', '=', id).executeTakeFirst(),
    findByBaseUrl: (baseUrl: string) =>
      db.selectFrom('schools').selectAll().where('base_url', '=', baseUrl).executeTakeFirst(),
    findByTopicKey: (topicKey: string) =>
      db.selectFrom('schools').selectAll().where('topic_key', '=', topicKey).executeTakeFirst(),
    async create(school: Omit<Insertable<SchoolsTable>, 'created_at' | 'updated_at'>): Promise<SchoolRow> {
      const now = Date.now();
      return changed(
        await db
          .insertInto('schools')
          .values({ ...school, created_at: now, updated_at: now })
          .returningAll()
          .executeTakeFirstOrThrow(),
      );
    },
    update: async (id: number, changes: Omit<Updateable<SchoolsTable>, 'id' | 'created_at' | 'updated_at'>) =>
      changed(
        await db
          .updateTable('schools')
          .set({ ...changes, updated_at: Date.now() })
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirst(),
      ),
    async remove(id: number): Promise<boolean> {
      const result = await db.deleteFrom('schools').where('id', '=', id).executeTakeFirst();
      return changed(Number(result.numDeletedRows) > 0);
    },
  };
}

/** A notification type calls sent with no template of its own (they got the generic one). */
export interface TypeWithoutTemplate {
  /** templateTypeKey of what was sent. */
  readonly type: string;
  /** How it was sent, most frequent first. */
  readonly spellings: readonly string[];
  readonly count: number;
  /** Epoch ms. */
  readonly lastSeenAt: number;
}

/** The fields a template is saved with; its match key is derived from `type`. */
export type TemplateValues = Pick<Insertable<TemplatesTable>, 'type' | 'title' | 'body'>;

export function createTemplateRepository(db: Kysely<Database>) {
  return {
    list: () => db.selectFrom('templates').selectAll().orderBy('type').execute(),
    findById: (id: number) => db.selectFrom('templates').selectAll().where('id', '=', id).executeTakeFirst(),
    /** The template a type would match (templateTypeKey), if any. */
    findByType: (type: string) =>
      db.selectFrom('templates').selectAll().where('type_key', '=', templateTypeKey(type)).executeTakeFirst(),
    /**
     * The template for a type, whatever its case and surrounding spaces (templateTypeKey), else
     * the generic one (`*`).
     */
    async forType(type: string): Promise<TemplateRow | undefined> {
      const key = templateTypeKey(type);
      const rows = await db.selectFrom('templates').selectAll().where('type_key', 'in', [key, '*']).execute();
      return rows.find((r) => r.type_key === key) ?? rows.find((r) => r.type_key === '*');
    },
    create: (t: TemplateValues) =>
      db
        .insertInto('templates')
        .values({ ...t, type_key: templateTypeKey(t.type), updated_at: Date.now() })
        .returningAll()
        .executeTakeFirstOrThrow(),
    update: (id: number, changes: TemplateValues) =>
      db
        .updateTable('templates')
        .set({ ...changes, type_key: templateTypeKey(changes.type), updated_at: Date.now() })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst(),
    async remove(id: number): Promise<boolean> {
      const result = await db.deleteFrom('templates').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
    /**
     * The types the latest successful SendNotificationType calls sent (at most `limit` calls, from
     * `since` on) that no template answers, most sent first. Bounded by `limit` whatever the size
     * of the history: the newest calls of one operation are read from the (operation, at, id)
     * index and parsed here, the same on SQLite and PostgreSQL.
     */
    async typesWithoutTemplate(options: {
      since: number;
      limit: number;
    }): Promise<{ scanned: number; types: TypeWithoutTemplate[] }> {
      const [calls, templates] = await Promise.all([
        db
          .selectFrom('calls')
          .select(['at', 'params', 'outcome'])
          .where('operation', '=', 'SendNotificationType')
          .where('at', '>=', options.since)
          .orderBy('at', 'desc')
          .orderBy('id', 'desc')
          .limit(options.limit)
          .execute(),
        db.selectFrom('templates').select('type_key').execute(),
      ]);
      const answered = new Set(templates.map((t) => t.type_key));
      const byKey = new Map<string, { count: number; lastSeenAt: number; spellings: Map<string, number> }>();
      for (const call of calls) {
        if (call.outcome !== 'ok' || call.params === null) continue;
        const sent = typeSent(call.params);
        if (sent === undefined) continue;
        const key = templateTypeKey(sent);
        if (key === '' || answered.has(key)) continue;
        let entry = byKey.get(key);
        if (!entry) {
          entry = { count: 0, lastSeenAt: Number(call.at), spellings: new Map() };
          byKey.set(key, entry);
        }
        entry.count++;
        entry.spellings.set(sent, (entry.spellings.get(sent) ?? 0) + 1);
      }
      const types = [...byKey].map(([type, e]) => ({
        type,
        spellings: [...e.spellings]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 5)
          .map(([spelling]) => spelling),
        count: e.count,
        lastSeenAt: e.lastSeenAt,
      }));
      types.sort((a, b) => b.count - a.count || b.lastSeenAt - a.lastSeenAt);
      return { scanned: calls.length, types };
    },
  };
}

/** The TypeNotfication a call's recorded parameters hold, if they can be read. */
function typeSent(params: string): string | undefined {
  try {
    const value: unknown = JSON.parse(params)?.TypeNotfication;
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

export function createBookRepository(db: Kysely<Database>) {
  return {
    list: () => db.selectFrom('books').selectAll().orderBy('term_id').orderBy('class_id').execute(),
    findById: (id: number) => db.selectFrom('books').selectAll().where('id', '=', id).executeTakeFirst(),
    find: (termId: string, classId: string) =>
      db
        .selectFrom('books')
        .selectAll()
        .where('term_id', '=', termId)
        .where('class_id', '=', classId)
        .executeTakeFirst(),
    /** Adds or replaces the book of a term and class. */
    upsert: (book: Omit<Insertable<BooksTable>, 'id'>) =>
      db
        .insertInto('books')
        .values(book)
        .onConflict((oc) =>
          oc.columns(['term_id', 'class_id']).doUpdateSet({
            sha256: book.sha256,
            size: book.size,
            filename: book.filename,
            uploaded_at: book.uploaded_at,
          }),
        )
        .returningAll()
        .executeTakeFirstOrThrow(),
    async remove(id: number): Promise<BookRow | undefined> {
      return db.deleteFrom('books').where('id', '=', id).returningAll().executeTakeFirst();
    },
    /** Bytes the library's files take (a file shared by several books counts once). */
    async totalBytes(): Promise<number> {
      const row = await db
        .selectFrom((eb) => eb.selectFrom('books').select(['sha256', 'size']).distinct().as('files'))
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('files.size'), eb.lit(0)).as('total'))
        .executeTakeFirstOrThrow();
      return Number(row.total);
    },
    /** How many books still use a file (files are shared by content). */
    async usesOf(sha256: string): Promise<number> {
      const row = await db
        .selectFrom('books')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('sha256', '=', sha256)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}

export type SchoolRepository = ReturnType<typeof createSchoolRepository>;
export type TemplateRepository = ReturnType<typeof createTemplateRepository>;
export type BookRepository = ReturnType<typeof createBookRepository>;
