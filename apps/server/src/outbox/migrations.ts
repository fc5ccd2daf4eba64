import { type Kysely, type Migration, sql } from 'kysely';
import { columnTypes, type DialectName, type KeptRows, type TableOwner } from '../store/index.js';
import { ON_THEIR_WAY } from './states.js';

/**
 * The outbox's part of the database's migrations (schema.ts has its tables' types), by the ids
 * of the one sequence the store's migrator runs (store/migrations.ts): each runs once, before the
 * store's part of the same migration. Never edit one that has shipped: add the next. The status
 * lists in the indexes' predicates are literals: a shipped index keeps the predicate it was made
 * with, whatever states.ts says later.
 */
function outboxMigrations(dialect: DialectName) {
  const { pg, id, key } = columnTypes(dialect);
  return {
    '0003_deliveries_schools_templates_books': {
      // The deliveries an operation queues, and each attempt to send one.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('deliveries')
          .addColumn('id', key, id)
          .addColumn('call_id', key, (c) => c.notNull().references('calls.id'))
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('provider', 'text', (c) => c.notNull())
          .addColumn('recipient', 'text', (c) => c.notNull())
          .addColumn('payload', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
          .addColumn('lease_until', 'bigint')
          .addColumn('expires_at', 'bigint')
          .addColumn('idempotency_key', 'text', (c) => c.notNull().unique())
          .addColumn('provider_id', 'text')
          .addColumn('last_error', 'text')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .addColumn('sent_at', 'bigint')
          .execute();
        await db.schema
          .createIndex('deliveries_due')
          .on('deliveries')
          .columns(['status', 'next_attempt_at'])
          .execute();
        await db.schema.createIndex('deliveries_call').on('deliveries').columns(['call_id']).execute();
        await db.schema
          .createTable('delivery_attempts')
          .addColumn('id', key, id)
          .addColumn('delivery_id', key, (c) => c.notNull().references('deliveries.id'))
          .addColumn('started_at', 'bigint', (c) => c.notNull())
          .addColumn('finished_at', 'bigint')
          .addColumn('outcome', 'text')
          .addColumn('status', 'integer')
          .addColumn('error', 'text')
          .addColumn('response', 'text')
          .addColumn('retry_after_ms', 'integer')
          .execute();
        await db.schema
          .createIndex('delivery_attempts_delivery')
          .on('delivery_attempts')
          .columns(['delivery_id'])
          .execute();
      },
    },
    '0004_delivery_provider_status': {
      // What the provider later reported about a sent message (Twilio status callbacks).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('deliveries').addColumn('provider_status', 'text').execute();
        await db.schema
          .createIndex('deliveries_provider_id')
          .on('deliveries')
          .columns(['provider_id'])
          .execute();
      },
    },
    '0006_rate_limit_indexes': {
      // AuthCode's abuse limits count recent codes per phone (deliveries) and per caller (calls).
      async up(db: Kysely<unknown>) {
        await db.schema
          .createIndex('deliveries_recipient')
          .on('deliveries')
          .columns(['recipient', 'created_at'])
          .execute();
      },
    },
    '0010_delivery_list': {
      // The Deliveries list: newest first by (created_at, id), which a time range seeks
      // too, and the `log` provider's deliveries by status (a partial index: `logged` counts and
      // filters; with a real provider it holds nothing and costs nothing).
      async up(db: Kysely<unknown>) {
        await db.schema
          .createIndex('deliveries_created_at')
          .on('deliveries')
          .columns(['created_at', 'id'])
          .execute();
        await db.schema
          .createIndex('deliveries_logged')
          .on('deliveries')
          .column('status')
          .where(sql.ref('provider'), '=', sql.lit('log'))
          .execute();
      },
    },
    '0013_sealed_sms_text': {
      // An SMS's text holds the auth code: it is kept sealed in a column of its own, destroyed
      // when the delivery settles, never in the payload's JSON (docs/security.md). Texts queued
      // before this are sealed by the outbox at start (`sealLegacyTexts`), which has the key.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('deliveries').addColumn('secret', 'text').execute();
      },
    },
    '0014_providers_per_attempt_and_instances': {
      // Each attempt records the provider it went to (a fallback may take over); a claim records
      // the instance that holds it (the store's part: the instances, docs/outbox.md).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('delivery_attempts').addColumn('provider', 'text').execute();
        await db.schema.alterTable('deliveries').addColumn('leased_by', 'text').execute();
      },
    },
    '0017_delivery_unsure_provider': {
      // The provider that may have taken a delivery without saying so (a timeout): if another
      // then sends it, the message may have arrived twice (docs/outbox.md#at-least-once-when-a-code-can-arrive-twice).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('deliveries').addColumn('unsure_provider', 'text').execute();
      },
    },
    '0018_time_partitions': {
      // PostgreSQL, before the store's part partitions the deliveries and attempts with the calls
      // (store/partition-upgrade.ts): a key that refers to a partitioned table must include its
      // time, which these rows do not carry, so the deliveries' key to calls and the attempts' to
      // deliveries go. The rows are written together in the call's transaction (enqueue.ts) and
      // retired together (OUTBOX_TABLES.kept). The unique index on the idempotency key goes too
      // (it would have to include the time as well): the key is 74 random bits after a timestamp
      // (payload.ts), and nothing looks a delivery up by it.
      async up(db: Kysely<unknown>) {
        if (!pg) return;
        await sql`ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_call_id_fkey`.execute(db);
        await sql`ALTER TABLE delivery_attempts DROP CONSTRAINT IF EXISTS delivery_attempts_delivery_id_fkey`.execute(
          db,
        );
        await sql`ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_idempotency_key_key`.execute(
          db,
        );
      },
    },
    '0021_failed_deliveries': {
      // History's delivery filter (history/call-filters.ts): the failed deliveries (dead or
      // expired) by when they were queued, with their call, in an index of their own. Each of the
      // filter's time windows reads its failed deliveries first; through `deliveries_due`
      // (status first) it gathered every failed delivery of the window's partitions, a month's
      // in a monthly partition, and intersected them with the time. Only a delivery that fails
      // has an entry: nothing more is written for the others. Built over the existing
      // deliveries, holding their writes meanwhile: an upgrade's pause, like 0020's index.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createIndex('deliveries_failed_at')
          .on('deliveries')
          .columns(['created_at', 'call_id'])
          .where(sql<boolean>`status IN ('dead', 'expired')`)
          .execute();
      },
    },
    '0022_deliveries_on_their_way': {
      // PostgreSQL: the deliveries on their way (pending or sending) by when they were queued,
      // for the oldest of them (the delivery roll-ups' limit, stats/delivery-rollups.ts). Without
      // it the planner read `created_at`'s index of every partition for the first one on its way,
      // and when none was, that was every delivery kept, once a minute and at every step of a
      // catch-up (docs/performance.md#the-outbox-on-partitions). With it, one entry per partition
      // at most. A delivery has an entry while it is on its way only. SQLite finds them through
      // `deliveries_due` (status first), as many as are on their way, and gets no new index on
      // its write path.
      // Built over the existing deliveries, holding their writes meanwhile, like 0021's.
      async up(db: Kysely<unknown>) {
        if (!pg) return;
        await db.schema
          .createIndex('deliveries_on_their_way')
          .on('deliveries')
          .columns(['created_at'])
          .where(sql<boolean>`status IN ('pending', 'sending')`)
          .execute();
      },
    },
    '0023_dead_sealed_deliveries': {
      // PostgreSQL: the outbox's sweep (outbox/sql.ts, `forget`): the dead SMS still holding their
      // sealed text, by when it expires. Through `deliveries_due` the sweep read every dead
      // delivery kept, each second, and planned every partition for it. An SMS has an entry only
      // from its death until its text is destroyed, at its code's validity: a few, whatever is
      // kept. SQLite keeps reading the dead ones through `deliveries_due`: one machine's.
      async up(db: Kysely<unknown>) {
        if (!pg) return;
        await db.schema
          .createIndex('deliveries_dead_sealed')
          .on('deliveries')
          .columns(['expires_at'])
          .where(sql<boolean>`status = 'dead' AND secret IS NOT NULL`)
          .execute();
      },
    },
    '0025_call_schools': {
      // Staff scoped to schools: a delivery belongs to its call's school (the store's part gives
      // the calls theirs), set as it is queued (enqueue.ts), so that a school's Deliveries list
      // is read newest first through an index of its own rather than by joining the calls. Null
      // for a call of no school and for every delivery queued before; the index holds those of a
      // school only (built over nothing on an existing database).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('deliveries').addColumn('school_id', key).execute();
        await db.schema
          .createIndex('deliveries_school_created_at')
          .on('deliveries')
          .columns(['school_id', 'created_at', 'id'])
          .where(sql.ref('school_id'), 'is not', null)
          .execute();
      },
    },
    '0027_write_path_indexes': {
      // Each index a delivery writes earns its place (docs/performance.md#what-each-index-costs-and-serves).
      // A provider's status callback finds its delivery by the provider's message id, and only
      // Twilio calls back (routes/twilio-status.ts): the index holds Twilio's deliveries from when
      // they are sent, where it held every delivery, each sent one with the id its provider gave
      // (the HTTP gateway's, the webhook's, FCM's pushes), none of which is ever looked up.
      // PostgreSQL: `deliveries_due` (status first) goes. What read through it reads through the
      // partial indexes of the few deliveries of a status: those on their way (0022: the claim,
      // the sweep's recovery and expiry, /metrics' due ones, the pending pushes), the failed ones
      // (0021: the Deliveries list by `dead` or `expired`), the dead still sealed (0023). SQLite
      // keeps it: its claim has nothing else. Both are built over the existing deliveries, holding
      // their writes meanwhile (an upgrade's pause, like 0021's); dropping one is a catalogue change.
      async up(db: Kysely<unknown>) {
        await db.schema.dropIndex('deliveries_provider_id').execute();
        await db.schema
          .createIndex('deliveries_provider_id')
          .on('deliveries')
          .column('provider_id')
          .where(sql<boolean>`provider = 'twilio' AND provider_id IS NOT NULL`)
          .execute();
        if (pg) await db.schema.dropIndex('deliveries_due').execute();
        // `deliveries_recipient` goes: an entry for every delivery, read by a number's erasure and
        // report only, which read the deliveries whole without it (a fraction of their search of
        // the calls' texts), and on SQLite by AuthCode's limits as they load a phone's last
        // minutes after a restart, which `deliveries_created_at` bounds as well.
        await db.schema.dropIndex('deliveries_recipient').execute();
      },
    },
  } satisfies Record<string, Migration>;
}

/** Deliveries on their way, as SQL over a delivery's columns. */
const onTheirWay = `status IN (${ON_THEIR_WAY.map((s) => `'${s}'`).join(', ')})`;

/**
 * What a retirement of old partitions keeps (store/partitions.ts): the deliveries still on their
 * way go back into `deliveries` in the statement that detaches their period, so that the
 * dispatcher never finds one missing; their attempts, and the calls of every delivery on its way
 * (one queued just after its call's period ended has its call in a retired period and is not in
 * it), go back before the period is dropped. Retired in this order, the deliveries first: the
 * others' rows kept are those of the deliveries on their way, wherever these are by then.
 */
const KEPT: readonly KeptRows[] = [
  { table: 'deliveries', where: onTheirWay, withDetach: true },
  { table: 'delivery_attempts', where: `delivery_id IN (SELECT id FROM deliveries WHERE ${onTheirWay})` },
  { table: 'calls', where: `id IN (SELECT call_id FROM deliveries WHERE ${onTheirWay})` },
];

/**
 * The outbox as an owner of tables, for whoever opens the database (plugins/store.ts, the
 * command line): its migrations, its tables partitioned by time on PostgreSQL (by when a delivery
 * was queued and an attempt started), and what retiring their old partitions keeps.
 */
export const OUTBOX_TABLES: TableOwner = {
  migrations: outboxMigrations,
  partitioned: [
    { table: 'deliveries', column: 'created_at' },
    { table: 'delivery_attempts', column: 'started_at' },
  ],
  kept: KEPT,
};
