import {
  type ColumnDefinitionBuilder,
  type Kysely,
  type Migration,
  type MigrationProvider,
  sql,
} from 'kysely';
import type { DialectName } from './dialect.js';
import type { TableOwner, TimePartitioned } from './owners.js';
import { partitionByTime } from './partition-upgrade.js';

export type { DialectName };

/**
 * The column types a migration writes where SQLite and PostgreSQL differ (an auto-numbered key,
 * 64-bit keys, floating point, bytes); the SQL SQLite gets is what it got before PostgreSQL was
 * supported. For the store's migrations and its tables' owners' (owners.ts).
 */
export function columnTypes(dialect: DialectName) {
  const pg = dialect === 'postgres';
  return {
    pg,
    /** A row id: SQLite's rowid alias, a 64-bit identity on PostgreSQL (pg reads it as a number, db.ts). */
    id: (c: ColumnDefinitionBuilder) =>
      pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey().autoIncrement(),
    /** The type of a row id and of what refers to one. */
    key: pg ? 'bigint' : 'integer',
    /** A float: SQLite's REAL is 8 bytes, PostgreSQL's `real` only 4. */
    float: pg ? 'double precision' : 'real',
    bytes: pg ? 'bytea' : 'blob',
  } as const;
}

/** The store's own tables partitioned by time (PostgreSQL): the calls, by when they came. */
export const STORE_PARTITIONED: readonly TimePartitioned[] = [{ table: 'calls', column: 'at' }];

/**
 * The store's part of the versioned migrations (its tables' owners have theirs: owners.ts).
 * `partitioned`: every table partitioned by time, the owners' too (0018).
 */
function storeMigrations(
  dialect: DialectName,
  partitioned: readonly TimePartitioned[],
): Record<string, Migration> {
  const { pg, id, key, float, bytes } = columnTypes(dialect);
  return {
    '0001_calls': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('calls')
          .addColumn('id', key, id)
          .addColumn('at', 'bigint', (c) => c.notNull())
          .addColumn('group_name', 'text', (c) => c.notNull())
          .addColumn('operation', 'text')
          .addColumn('binding', 'text', (c) => c.notNull())
          .addColumn('caller_ip', 'text', (c) => c.notNull())
          .addColumn('user_agent', 'text')
          .addColumn('params', 'text')
          .addColumn('outcome', 'text', (c) => c.notNull())
          .addColumn('status', 'integer', (c) => c.notNull())
          .addColumn('error', 'text')
          .addColumn('duration_ms', float, (c) => c.notNull())
          .addColumn('request', 'text', (c) => c.notNull())
          .addColumn('request_bytes', 'integer', (c) => c.notNull())
          .addColumn('response', 'text', (c) => c.notNull())
          .addColumn('response_bytes', 'integer', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('calls_at').on('calls').columns(['at', 'id']).execute();
        await db.schema.createIndex('calls_operation').on('calls').columns(['operation', 'id']).execute();
      },
    },
    '0002_call_filter_indexes': {
      // History lists newest first by (at, id) under one filter: each filter gets its index.
      async up(db: Kysely<unknown>) {
        await db.schema.dropIndex('calls_operation').execute();
        for (const column of ['operation', 'binding', 'outcome', 'caller_ip']) {
          await db.schema
            .createIndex(`calls_${column}_at`)
            .on('calls')
            .columns([column, 'at', 'id'])
            .execute();
        }
      },
    },
    '0003_deliveries_schools_templates_books': {
      // The outbox's tables came in this one too (outbox/migrations.ts).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('calls').addColumn('note', 'text').execute();
        await db.schema
          .createTable('schools')
          .addColumn('id', key, id)
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('base_url', 'text', (c) => c.notNull().unique())
          .addColumn('topic_key', 'text', (c) => c.notNull().unique())
          .addColumn('allowed_ips', 'text')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('templates')
          .addColumn('id', key, id)
          .addColumn('type', 'text', (c) => c.notNull().unique())
          .addColumn('title', 'text', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .execute();
        const now = Date.now();
        await db
          .insertInto('templates' as never)
          .values([
            {
              type: '*',
              title: 'New notification',
              body: 'There is a new {type} notification for you.',
              updated_at: now,
            },
            {
              type: 'marks',
              title: 'New marks',
              body: 'New marks have been published for class {id_class}.',
              updated_at: now,
            },
          ] as never)
          .execute();
        await db.schema
          .createTable('books')
          .addColumn('id', key, id)
          .addColumn('term_id', 'text', (c) => c.notNull())
          .addColumn('class_id', 'text', (c) => c.notNull())
          .addColumn('sha256', 'text', (c) => c.notNull())
          .addColumn('size', 'bigint', (c) => c.notNull())
          .addColumn('filename', 'text', (c) => c.notNull())
          .addColumn('uploaded_at', 'bigint', (c) => c.notNull())
          .addUniqueConstraint('books_term_class', ['term_id', 'class_id'])
          .execute();
      },
    },
    '0007_users_sessions_audit': {
      // Staff accounts (docs/security.md). Sessions are stored by the SHA-256 of their token, so the
      // database never holds a usable cookie.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('users')
          .addColumn('id', key, id)
          .addColumn('username', 'text', (c) => c.notNull().unique())
          .addColumn('display_name', 'text', (c) => c.notNull())
          .addColumn('role', 'text', (c) => c.notNull())
          .addColumn('password_hash', 'text', (c) => c.notNull())
          .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .addColumn('last_login_at', 'bigint')
          .execute();
        await db.schema
          .createTable('sessions')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('user_id', key, (c) => c.notNull().references('users.id'))
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('ip', 'text', (c) => c.notNull())
          .addColumn('user_agent', 'text')
          .execute();
        await db.schema.createIndex('sessions_user').on('sessions').columns(['user_id']).execute();
        await db.schema
          .createTable('audit')
          .addColumn('id', key, id)
          .addColumn('at', 'bigint', (c) => c.notNull())
          .addColumn('user_id', key)
          .addColumn('username', 'text')
          .addColumn('ip', 'text', (c) => c.notNull())
          .addColumn('action', 'text', (c) => c.notNull())
          .addColumn('target', 'text')
          .addColumn('details', 'text')
          .execute();
        await db.schema.createIndex('audit_at').on('audit').columns(['at', 'id']).execute();
        await db.schema
          .createIndex('audit_username_at')
          .on('audit')
          .columns(['username', 'at', 'id'])
          .execute();
        await db.schema.createIndex('audit_action_at').on('audit').columns(['action', 'at', 'id']).execute();
      },
    },
    '0008_multi_instance': {
      // Several instances on one database (docs/deployment.md): the request id each call was
      // answered under, AuthCode's limit slots shared by every instance, and (on PostgreSQL) the
      // books' bytes, chunked, so that instances share nothing but the database.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('calls').addColumn('request_id', 'text').execute();
        await db.schema
          .createTable('limit_slots')
          .addColumn('id', key, id)
          .addColumn('dimension', 'text', (c) => c.notNull())
          .addColumn('key', 'text', (c) => c.notNull())
          .addColumn('at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema
          .createIndex('limit_slots_key_at')
          .on('limit_slots')
          .columns(['dimension', 'key', 'at'])
          .execute();
        await db.schema.createIndex('limit_slots_at').on('limit_slots').columns(['at']).execute();
        await db.schema
          .createTable('book_chunks')
          .addColumn('sha256', 'text', (c) => c.notNull())
          .addColumn('seq', 'integer', (c) => c.notNull())
          .addColumn('data', bytes, (c) => c.notNull())
          .addPrimaryKeyConstraint('book_chunks_pk', ['sha256', 'seq'])
          .execute();
      },
    },
    '0009_take_limit_slots': {
      // PostgreSQL: taking limit slots in one round trip (store/limits.ts). The check and the
      // slots are one statement under per-key advisory locks, as the transaction it replaces.
      async up(db: Kysely<unknown>) {
        if (!pg) return;
        await sql`CREATE FUNCTION take_limit_slots(dims text[], keys text[], maxes integer[], windows bigint[], now_ms bigint)
          RETURNS TABLE (refused integer, retry_after_ms bigint, slot_ids bigint[])
          LANGUAGE plpgsql AS $$
          DECLARE
            n integer;
            oldest bigint;
            ids bigint[] := '{}';
            new_id bigint;
          BEGIN
            PERFORM pg_advisory_xact_lock(hashtextextended(k, 0))
              FROM (SELECT DISTINCT 'limit:' || dims[j] || ':' || keys[j] AS k
                    FROM generate_subscripts(dims, 1) AS j ORDER BY 1) AS locks;
            FOR i IN 1 .. coalesce(array_length(dims, 1), 0) LOOP
              DELETE FROM limit_slots
                WHERE dimension = dims[i] AND key = keys[i] AND at <= now_ms - windows[i];
              SELECT count(*), min(at) INTO n, oldest FROM (
                SELECT at FROM limit_slots
                WHERE dimension = dims[i] AND key = keys[i] AND at > now_ms - windows[i]
                ORDER BY at DESC LIMIT maxes[i]) AS recent;
              IF n >= maxes[i] THEN
                RETURN QUERY SELECT i - 1, greatest(1, oldest + windows[i] - now_ms), NULL::bigint[];
                RETURN;
              END IF;
            END LOOP;
            FOR i IN 1 .. coalesce(array_length(dims, 1), 0) LOOP
              INSERT INTO limit_slots (dimension, key, at) VALUES (dims[i], keys[i], now_ms)
                RETURNING id INTO new_id;
              ids := ids || new_id;
            END LOOP;
            RETURN QUERY SELECT -1, 0::bigint, ids;
          END
          $$`.execute(db);
      },
    },
    '0011_outcome_by_status': {
      // A call's outcome follows its status (recording/record.ts outcomeOf): a 4xx is a client error,
      // a 5xx a server error unless it blames the caller. Calls recorded before, such as a book
      // range answered 416 as `ok`, are put right.
      async up(db: Kysely<unknown>) {
        await sql`UPDATE calls SET outcome = 'client-error'
          WHERE outcome <> 'client-error' AND status >= 400 AND status < 500`.execute(db);
        await sql`UPDATE calls SET outcome = 'server-error'
          WHERE outcome = 'ok' AND status >= 500`.execute(db);
      },
    },
    '0012_template_type_key': {
      // A template answers its type whatever the case and the spaces around it: the
      // key it is matched by (trimmed, lower case, as templateTypeKey), unique. Where templates
      // already differ only by case, the oldest keeps the key and the others get none (never
      // matched; the console says so, and saving one is refused until its type is changed).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('templates').addColumn('type_key', 'text').execute();
        const rows = (await db
          .selectFrom('templates' as never)
          .select(['id', 'type'] as never)
          .orderBy('id' as never)
          .execute()) as { id: number; type: string }[];
        const keyed = new Set<string>();
        for (const row of rows) {
          const key = row.type.trim().toLowerCase();
          if (keyed.has(key)) continue;
          keyed.add(key);
          await db
            .updateTable('templates' as never)
            .set({ type_key: key } as never)
            .where('id' as never, '=', row.id as never)
            .execute();
        }
        await db.schema
          // Not templates_type_key: PostgreSQL gave that name to the unique constraint on `type`.
          .createIndex('templates_by_type_key')
          .on('templates')
          .column('type_key')
          .unique()
          .execute();
      },
    },
    '0014_providers_per_attempt_and_instances': {
      // Instances announce themselves (docs/outbox.md); the outbox's part records who holds a claim.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('instances')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('started_at', 'bigint', (c) => c.notNull())
          .addColumn('seen_at', 'bigint', (c) => c.notNull())
          .execute();
      },
    },
    '0015_second_factor_and_sso': {
      // A second factor (TOTP) for password logins, and users of the school's own identity
      // provider (docs/security.md); a session says how it was opened.
      async up(db: Kysely<unknown>) {
        for (const column of ['totp_secret', 'totp_pending', 'recovery_codes', 'sso_subject']) {
          await db.schema.alterTable('users').addColumn(column, 'text').execute();
        }
        await db.schema.alterTable('users').addColumn('totp_last_step', 'bigint').execute();
        await db.schema.createIndex('users_sso_subject').on('users').column('sso_subject').unique().execute();
        await db.schema
          .alterTable('sessions')
          .addColumn('method', 'text', (c) => c.notNull().defaultTo('password'))
          .execute();
      },
    },
    '0016_call_rollups': {
      // Hourly roll-ups of the calls for the Dashboard (stats/call-rollups.ts): made from the
      // calls in the background, an hour once it has ended, so nothing is backfilled here.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('call_hours')
          .addColumn('hour', 'bigint', (c) => c.notNull())
          .addColumn('operation', 'text')
          .addColumn('outcome', 'text', (c) => c.notNull())
          .addColumn('bin', 'integer', (c) => c.notNull())
          .addColumn('count', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('call_hours_hour').on('call_hours').column('hour').execute();
        await db.schema
          .createTable('call_error_hours')
          .addColumn('hour', 'bigint', (c) => c.notNull())
          .addColumn('operation', 'text')
          .addColumn('status', 'integer', (c) => c.notNull())
          .addColumn('outcome', 'text', (c) => c.notNull())
          .addColumn('error', 'text')
          .addColumn('count', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('call_error_hours_hour').on('call_error_hours').column('hour').execute();
        await db.schema
          .createTable('call_rollup_state')
          .addColumn('id', 'integer', (c) => c.primaryKey())
          .addColumn('rolled_until', 'bigint')
          .execute();
        await sql`INSERT INTO call_rollup_state (id, rolled_until) VALUES (1, NULL)`.execute(db);
      },
    },
    '0018_time_partitions': {
      // PostgreSQL: the tables that grow with calls become partitioned by time (store/partitions.ts
      // creates the periods ahead and retires them whole): the calls, and the owners' tables
      // partitioned by time (the outbox's deliveries and attempts, whose part drops their keys
      // first). What they held stays as it is, attached as one partition `<table>_legacy` for
      // everything before the next day (UTC); retention deletes its old rows in batches until the
      // whole of it is past, then drops it. SQLite keeps its single tables.
      async up(db: Kysely<unknown>) {
        if (!pg) return;
        await partitionByTime(db, partitioned);
      },
    },
    '0019_delivery_rollups': {
      // Hourly roll-ups of the deliveries for the Dashboard (stats/delivery-rollups.ts): an hour
      // once none of its deliveries is on its way, made in the background, so nothing here.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('delivery_hours')
          .addColumn('hour', 'bigint', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('logged', 'integer', (c) => c.notNull())
          .addColumn('count', 'bigint', (c) => c.notNull())
          .addColumn('attempts', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('delivery_hours_hour').on('delivery_hours').column('hour').execute();
        await db.schema
          .createTable('delivery_rollup_state')
          .addColumn('id', 'integer', (c) => c.primaryKey())
          .addColumn('rolled_until', 'bigint')
          .execute();
        await sql`INSERT INTO delivery_rollup_state (id, rolled_until) VALUES (1, NULL)`.execute(db);
      },
    },
    '0020_call_phone': {
      // History's phone filter: the call's phone (AuthCode's, E.164) in a column of its own, in
      // an index of the calls that have one. Calls recorded before have none (free text finds
      // them): filling it in would rewrite every row, and retention ends their days anyway. A new
      // nullable column is only a catalogue change; the index is built over the existing rows
      // (on PostgreSQL, in each partition, the upgrade's legacy one included), holding writes
      // meanwhile: an upgrade's pause, like 0018's key.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('calls').addColumn('phone', 'text').execute();
        await db.schema
          .createIndex('calls_phone_at')
          .on('calls')
          .columns(['phone', 'at', 'id'])
          .where(sql.ref('phone'), 'is not', null)
          .execute();
      },
    },
    '0024_user_schools': {
      // Staff scoped to schools: a user's schools as a JSON array of school ids (store/users.ts,
      // schoolIdsOf); null, as for every existing user, is organisation-wide. A nullable column: a
      // catalogue change.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('users').addColumn('school_ids', 'text').execute();
      },
    },
    '0025_call_schools': {
      // Staff scoped to schools (docs/security.md#who-sees-what): the school a call belongs to,
      // decided as it is recorded (operations/call-school.ts), in an index that serves a school's
      // History newest first; null for a call of no school, and for every call recorded before
      // (seen organisation-wide only). A nullable column is a catalogue change; the index holds
      // the calls that have a school only, so it is built over nothing on an existing database
      // and costs nothing for a call of none. It carries the operation, outcome and binding too:
      // a school's calls under one of those filters are told apart in the index, without reading
      // each call (docs/performance.md#staff-scoped-to-schools).
      // The outbox's part gives the deliveries their call's.
      // And the Dashboard's roll-ups per school (stats/call-rollups.ts, delivery-rollups.ts), for
      // a scoped user's figures: beside the organisation's, which keep their size and speed; made
      // from the hours rolled up from now on (the calls before have no school).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('calls').addColumn('school_id', key).execute();
        await db.schema
          .createIndex('calls_school_at')
          .on('calls')
          .columns(['school_id', 'at', 'id', 'operation', 'outcome', 'binding'])
          .where(sql.ref('school_id'), 'is not', null)
          .execute();
        await db.schema
          .createTable('school_call_hours')
          .addColumn('hour', 'bigint', (c) => c.notNull())
          .addColumn('school_id', key, (c) => c.notNull())
          .addColumn('operation', 'text')
          .addColumn('outcome', 'text', (c) => c.notNull())
          .addColumn('bin', 'integer', (c) => c.notNull())
          .addColumn('count', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('school_call_error_hours')
          .addColumn('hour', 'bigint', (c) => c.notNull())
          .addColumn('school_id', key, (c) => c.notNull())
          .addColumn('operation', 'text')
          .addColumn('status', 'integer', (c) => c.notNull())
          .addColumn('outcome', 'text', (c) => c.notNull())
          .addColumn('error', 'text')
          .addColumn('count', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('school_delivery_hours')
          .addColumn('hour', 'bigint', (c) => c.notNull())
          .addColumn('school_id', key, (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('logged', 'integer', (c) => c.notNull())
          .addColumn('count', 'bigint', (c) => c.notNull())
          .addColumn('attempts', 'bigint', (c) => c.notNull())
          .execute();
        for (const table of ['school_call_hours', 'school_call_error_hours', 'school_delivery_hours']) {
          await db.schema
            .createIndex(`${table}_school_hour`)
            .on(table)
            .columns(['school_id', 'hour'])
            .execute();
          // Retention and the resend's reopening delete by hour alone.
          await db.schema.createIndex(`${table}_hour`).on(table).column('hour').execute();
        }
      },
    },
    '0026_call_answers': {
      // An answer recorded by reference (issue 46): a success's text is the same for every call
      // of its operation and binding, so it is kept once in call_answers and a call refers to it
      // (store/call-answers.ts). Its id is a small integer on both databases. A nullable column is
      // a catalogue change (on PostgreSQL the partitions take it from their parent); no index:
      // nothing looks calls up by it, and free text finds the answers first, then the calls.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('call_answers')
          .addColumn('id', 'integer', id)
          .addColumn('response', 'text', (c) => c.notNull().unique())
          .execute();
        await db.schema.alterTable('calls').addColumn('response_ref', 'integer').execute();
      },
    },
    '0027_write_path_indexes': {
      // Each index a call writes earns its place (docs/performance.md#what-each-index-costs-and-serves).
      // Most calls are answered `ok`, and History lists them newest first through `calls_at`
      // whatever their outcome: the outcome's index holds the calls that were not ok only, the
      // few a filter by outcome looks for. Its predicate is an OR of equalities so that SQLite
      // proves it from History's `outcome = ?` once the value is bound, as PostgreSQL does from
      // its parameter: a third outcome added to OUTCOMES would need a migration to be indexed.
      // Built over the existing calls, holding their writes meanwhile (an upgrade's pause, like
      // 0020's index: on PostgreSQL, in each partition); a call that is ok writes no entry.
      async up(db: Kysely<unknown>) {
        await db.schema.dropIndex('calls_outcome_at').execute();
        await db.schema
          .createIndex('calls_outcome_at')
          .on('calls')
          .columns(['outcome', 'at', 'id'])
          .where(sql<boolean>`outcome = 'client-error' OR outcome = 'server-error'`)
          .execute();
      },
    },
  };
}

/** Every table partitioned by time: the store's, then each owner's, in the order given. */
export const partitionedTables = (owners: readonly TableOwner[]): readonly TimePartitioned[] => [
  ...STORE_PARTITIONED,
  ...owners.flatMap((o) => o.partitioned),
];

/**
 * Versioned migrations, in order; each runs once, recorded by Kysely's migrator. Never edit one
 * that has shipped: add the next. One sequence for the whole database, each migration made of the
 * parts of the store and of its tables' owners (owners.ts) that have one: the owners' parts
 * first, in the order given, then the store's. An owner's tables refer to the store's, never the
 * other way: what an owner changes of its own comes first (0018 drops the outbox's keys to the
 * calls before the calls are partitioned).
 */
function migrationsFor(dialect: DialectName, owners: readonly TableOwner[]): Record<string, Migration> {
  const parts = [
    ...owners.map((o) => o.migrations(dialect)),
    storeMigrations(dialect, partitionedTables(owners)),
  ];
  const ids = [...new Set(parts.flatMap((p) => Object.keys(p)))].sort();
  return Object.fromEntries(
    ids.map((name) => {
      const steps = parts.flatMap((p) => p[name] ?? []);
      const migration: Migration = {
        async up(db) {
          for (const step of steps) await step.up(db);
        },
      };
      return [name, migration];
    }),
  );
}

/** The migrations for a dialect, for Kysely's migrator: the store's and its tables' owners'. */
export const migrationProvider = (
  dialect: DialectName,
  owners: readonly TableOwner[],
): MigrationProvider => ({
  getMigrations: async () => migrationsFor(dialect, owners),
});
