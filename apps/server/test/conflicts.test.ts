/**
 * A write that breaks a unique constraint is recognised from the driver's fields, and named by
 * PostgreSQL's name for the constraint whichever the database (store/conflicts.ts); the console
 * answers a clash 409 however it was found. On every database the store supports.
 */

import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Store, UNIQUE_CONSTRAINTS, uniqueViolation } from '../src/store/index.js';
import type { TestApp } from './helpers.js';
import { DIALECTS, openTestStoresOn, startTestAppOn, type TestStores } from './pg.js';

/**
 * PostgreSQL's own differences (migration 0018, store/partition-upgrade.ts): the keys of the
 * time-partitioned tables include their time, and the deliveries' idempotency key is unique on
 * SQLite only. No write of the application can break those.
 */
const { deliveries_idempotency_key_key: _sqliteOnly, ...shared } = UNIQUE_CONSTRAINTS;
const ON_POSTGRES = {
  ...shared,
  calls_pkey: 'calls.id, calls.at',
  deliveries_pkey: 'deliveries.id, deliveries.created_at',
  delivery_attempts_pkey: 'delivery_attempts.id, delivery_attempts.started_at',
};

/** What `write` failed with, as uniqueViolation names it; a write that succeeds fails the test. */
async function brokenBy(write: Promise<unknown>) {
  return write.then(
    () => {
      throw new Error('the write succeeded');
    },
    (err: unknown) => uniqueViolation(err),
  );
}

/** The unique constraints the migrated database has, as `table.column[, table.column]`. */
async function uniqueColumns(store: Store): Promise<Record<string, string> | string[]> {
  if (store.dialect === 'postgres') {
    const { rows } = await sql<{ name: string; columns: string }>`
      SELECT i.relname AS name,
        string_agg(t.relname || '.' || a.attname, ', ' ORDER BY k.n) AS columns
      FROM pg_index x
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace s ON s.oid = t.relnamespace
      CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
      JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
      WHERE x.indisunique AND s.nspname = current_schema() AND t.relname NOT LIKE 'kysely_%'
        AND NOT t.relispartition
      GROUP BY i.relname`.execute(store.db);
    return Object.fromEntries(rows.map((r) => [r.name, r.columns]));
  }
  // SQLite names no constraint: the columns of each unique index, and of each primary key (a
  // rowid alias has no index of its own).
  const { rows } = await sql<{ columns: string }>`
    SELECT group_concat(m.name || '.' || c.name, ', ' ORDER BY c.seqno) AS columns
    FROM sqlite_master m, pragma_index_list(m.name) l, pragma_index_info(l.name) c
    WHERE m.type = 'table' AND l."unique" AND m.name NOT LIKE 'kysely_%'
    GROUP BY m.name, l.name
    UNION
    SELECT group_concat(m.name || '.' || c.name, ', ' ORDER BY c.pk)
    FROM sqlite_master m, pragma_table_info(m.name) c
    WHERE m.type = 'table' AND c.pk > 0 AND m.name NOT LIKE 'kysely_%'
    GROUP BY m.name`.execute(store.db);
  return rows.map((r) => r.columns).sort();
}

describe.each(DIALECTS)('unique violations (%s)', (dialect) => {
  let stores: TestStores;
  let store: Store;

  beforeEach(async () => {
    stores = await openTestStoresOn(dialect);
    store = stores.store;
  });
  afterEach(() => stores.close());

  it('knows every unique constraint the migrations make, by its name and columns', async () => {
    const found = await uniqueColumns(store);
    if (dialect === 'postgres') expect(found).toEqual(ON_POSTGRES);
    else expect(found).toEqual([...new Set(Object.values(UNIQUE_CONSTRAINTS))].sort());
  });

  it('names the constraint a write broke', async () => {
    const school = (base_url: string, topic_key: string) =>
      store.schools.create({ name: 'North', base_url, topic_key, allowed_ips: null });
    await school('https://north.example.org', 'north');
    expect(await brokenBy(school('https://north.example.org', 'other'))).toBe('schools_base_url_key');
    expect(await brokenBy(school('https://other.example.org', 'north'))).toBe('schools_topic_key_key');

    await store.templates.create({ type: 'News', title: 'N', body: 'B' });
    expect(await brokenBy(store.templates.create({ type: ' NEWS', title: 'N', body: 'B' }))).toBe(
      'templates_by_type_key',
    );
    // The type as written is unique too (a template without a key is never matched, migrations.ts).
    const unkeyed = { type: 'News', type_key: null, title: 'N', body: 'B', updated_at: 0 };
    expect(await brokenBy(store.db.insertInto('templates').values(unkeyed).execute())).toBe(
      'templates_type_key',
    );

    // Two columns: SQLite names both.
    const book = {
      term_id: 't',
      class_id: 'c',
      sha256: 'a'.repeat(64),
      size: 1,
      filename: 'b.pdf',
      uploaded_at: 0,
    };
    await store.db.insertInto('books').values(book).execute();
    expect(await brokenBy(store.db.insertInto('books').values(book).execute())).toBe('books_term_class');

    const user = { display_name: 'Bob', role: 'operator', password_hash: 'x' } as const;
    await store.users.create({ ...user, username: 'bob' });
    expect(await brokenBy(store.users.create({ ...user, username: 'BOB' }))).toBe('users_username_key');
    await store.users.createSso({ ...user, username: 'sso-a', sso_subject: 'subject-1' });
    expect(
      await brokenBy(store.users.createSso({ ...user, username: 'sso-b', sso_subject: 'subject-1' })),
    ).toBe('users_sso_subject');

    // A primary key (SQLite reports SQLITE_CONSTRAINT_PRIMARYKEY, not _UNIQUE).
    const [bob] = await store.users.list();
    const session = {
      id: 'session-1',
      user_id: bob?.id ?? 0,
      created_at: 0,
      last_seen_at: 0,
      expires_at: 0,
      ip: '10.0.0.1',
      user_agent: null,
      method: 'password',
    } as const;
    await store.sessions.create(session);
    expect(await brokenBy(store.sessions.create(session))).toBe('sessions_pkey');
  });

  it('says `unknown` of a constraint it does not list, and nothing of other errors', async () => {
    await sql`CREATE TABLE scratch (k text UNIQUE)`.execute(store.db);
    await sql`INSERT INTO scratch (k) VALUES ('a')`.execute(store.db);
    expect(await brokenBy(sql`INSERT INTO scratch (k) VALUES ('a')`.execute(store.db))).toBe('unknown');

    expect(await brokenBy(sql`INSERT INTO scratch (nope) VALUES ('a')`.execute(store.db))).toBeUndefined();
    expect(await brokenBy(sql`INSERT INTO books (term_id) VALUES ('t')`.execute(store.db))).toBeUndefined();
    // Its wording alone is not enough.
    expect(uniqueViolation(new Error('UNIQUE constraint failed: users.username'))).toBeUndefined();
    expect(uniqueViolation(new Error('duplicate key value violates unique constraint'))).toBeUndefined();
    expect(uniqueViolation({ code: '23505', constraint: 'users_username_key' })).toBeUndefined();
    expect(uniqueViolation(undefined)).toBeUndefined();
  });
});

describe.each(DIALECTS)('clashes the database finds are a 409 (%s)', (dialect) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestAppOn(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('two users of one name added at once: one is made, the other is told the name is taken', async () => {
    const add = () =>
      t.inject({
        method: 'POST',
        url: '/api/users',
        payload: {
          username: 'carol',
          displayName: 'Carol',
          password: 'a long password 123',
          role: 'operator',
        },
      });
    const answers = await Promise.all([add(), add(), add()]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 409, 409]);
    for (const refused of answers.filter((a) => a.statusCode === 409)) {
      expect(refused.json()).toMatchObject({
        detail: 'There is already a user named carol.',
        errors: { username: 'There is already a user named carol.' },
      });
    }
  });

  it('two templates of one type added at once: one is made, the other names it', async () => {
    const add = (type: string) =>
      t.inject({ method: 'POST', url: '/api/templates', payload: { type, title: 'Reports', body: 'New.' } });
    const answers = await Promise.all([add('Reports'), add('REPORTS')]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 409]);
    const refused = answers.find((a) => a.statusCode === 409)?.json();
    expect(refused?.detail).toMatch(/^The (Reports|REPORTS) template already answers (Reports|REPORTS): /);
  });
});
