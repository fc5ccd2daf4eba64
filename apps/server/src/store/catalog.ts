import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { BooksTable, Database, SchoolsTable, TemplatesTable } from './schema.js';

export type SchoolRow = Selectable<SchoolsTable>;
export type TemplateRow = Selectable<TemplatesTable>;
export type BookRow = Selectable<BooksTable>;

/** The registry of schools, templates and books the operations use; plain single statements. */
export function createSchoolRepository(db: Kysely<Database>) {
  return {
    list: () => db.selectFrom('schools').selectAll().orderBy('name').execute(),
    findById: (id: number) => db.selectFrom('schools').selectAll().where('id', '=', id).executeTakeFirst(),
    findByBaseUrl: (baseUrl: string) =>
      db.selectFrom('schools').selectAll().where('base_url', '=', baseUrl).executeTakeFirst(),
    async create(school: Omit<Insertable<SchoolsTable>, 'created_at' | 'updated_at'>): Promise<SchoolRow> {
      const now = Date.now();
      return db
        .insertInto('schools')
        .values({ ...school, created_at: now, updated_at: now })
        .returningAll()
        .executeTakeFirstOrThrow();
    },
    update: (id: number, changes: Omit<Updateable<SchoolsTable>, 'id' | 'created_at' | 'updated_at'>) =>
      db
        .updateTable('schools')
        .set({ ...changes, updated_at: Date.now() })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst(),
    async remove(id: number): Promise<boolean> {
      const result = await db.deleteFrom('schools').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
  };
}

export function createTemplateRepository(db: Kysely<Database>) {
  return {
    list: () => db.selectFrom('templates').selectAll().orderBy('type').execute(),
    findById: (id: number) => db.selectFrom('templates').selectAll().where('id', '=', id).executeTakeFirst(),
    /** The template for a type, else the generic one (`*`). */
    async forType(type: string): Promise<TemplateRow | undefined> {
      const rows = await db.selectFrom('templates').selectAll().where('type', 'in', [type, '*']).execute();
      return rows.find((r) => r.type === type) ?? rows.find((r) => r.type === '*');
    },
    create: (t: Omit<Insertable<TemplatesTable>, 'updated_at'>) =>
      db
        .insertInto('templates')
        .values({ ...t, updated_at: Date.now() })
        .returningAll()
        .executeTakeFirstOrThrow(),
    update: (id: number, changes: Omit<Updateable<TemplatesTable>, 'id' | 'updated_at'>) =>
      db
        .updateTable('templates')
        .set({ ...changes, updated_at: Date.now() })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst(),
    async remove(id: number): Promise<boolean> {
      const result = await db.deleteFrom('templates').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
  };
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
