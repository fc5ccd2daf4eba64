/**
 * `pnpm migrate-data --from ./data --to postgres://…`: moves a SQLite store (DATA_DIR) into an
 * empty PostgreSQL database, ids and book bytes included (docs/deployment.md#moving-from-sqlite-to-postgresql).
 *
 * The copy is one transaction on the target: it is all there, counts verified, or nothing is.
 * It reads the source in one read transaction too, so it copies one consistent moment of it.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely';
import { BOOK_CHUNK_BYTES, bookPath, readFully } from '../books/blobs.js';
import { OUTBOX_TABLES } from '../outbox/index.js';
import { unsealedText } from '../outbox/payload.js';
import { createFilesPrivately } from '../private-files.js';
import { KEY_FILE, loadSealer, type Sealer } from '../secrets/sealer.js';
import {
  COPIED_TABLES,
  createPartitions,
  type Database,
  isPostgresUrl,
  type OpenedDatabase,
  openDatabase,
  PARTITION_PERIODS,
  type PartitionPeriod,
} from '../store/index.js';

const USAGE = `Usage: pnpm migrate-data --from <DATA_DIR> --to <postgres://user:password@host:5432/database>

Copies everything in the SQLite store in DATA_DIR (school-messaging.db and the books folder)
into an empty PostgreSQL database, keeping every id: users, audit, schools, templates, books and
their bytes, calls, deliveries, delivery attempts and limit slots. Sessions are not copied: staff
log in again. Both databases are first brought to the latest schema.

Stop the server using DATA_DIR first: what it records after the copy starts is not copied.

On PostgreSQL calls, deliveries and attempts are partitioned by time: the partitions the copied
history needs are made first, a day or a month each as PARTITION_PERIOD says (month when unset;
give it the value the servers will have).

SMS still waiting to be sent keep their text sealed under DATA_DIR's key file; they are sealed
again under CODE_ENCRYPTION_KEY, the key the PostgreSQL instances will use: set it in this
command's environment when there are any (the copy is refused otherwise).

  --from <dir>   the SQLite server's DATA_DIR
  --to <url>     the PostgreSQL database (DATABASE_URL of the new deployment); it must hold no
                 calls, users, schools, books or templates of its own
  --help         this text

Exit status: 0 copied and verified; 1 failed (nothing was copied); 2 refused, the target is
not empty.`;

/** What is copied (store/schema.ts), parents before the rows that refer to them. */
const TABLES = COPIED_TABLES;
type CopiedTable = (typeof TABLES)[number];

/** Tables deliberately not copied row by row, and why. */
const NOT_COPIED: Partial<Record<keyof Database, string>> = {
  sessions: 'staff log in again on the new deployment',
  instances: 'each PostgreSQL instance announces itself when it starts',
  book_chunks: 'built from the book files (SQLite keeps books as files under DATA_DIR/books)',
  call_hours: 'the Dashboard’s roll-ups: the target’s server makes them from the copied calls',
  call_error_hours: 'the Dashboard’s roll-ups: the target’s server makes them from the copied calls',
  call_rollup_state: 'the roll-ups’ watermark: left unset on the target, so it rolls from the oldest call',
  delivery_hours: 'the Dashboard’s roll-ups: the target’s server makes them from the copied deliveries',
  school_call_hours: 'the roll-ups per school: the target’s server makes them from the copied calls',
  school_call_error_hours: 'the roll-ups per school: the target’s server makes them from the copied calls',
  school_delivery_hours: 'the roll-ups per school: the target’s server makes them from the copied deliveries',
  delivery_rollup_state:
    'the roll-ups’ watermark: left unset on the target, so it rolls from the oldest delivery',
};

/** The templates every new database is seeded with (migration 0003); the source's replace them. */
const SEEDED_TEMPLATES = ['*', 'marks'];

/** Rows per INSERT at most; and PostgreSQL binds at most 65535 parameters per statement. */
const MAX_ROWS = 1000;
const MAX_PARAMETERS = 65_535;
/** Characters of text read per batch at most (call records carry raw messages): bounded memory. */
const BATCH_TEXT_CHARS = 8 * 1024 * 1024;
/** Book chunks per INSERT: 1 MiB. */
const CHUNKS_PER_INSERT = 4;

/** Exit status 2: the target already holds data, nothing was written. */
class Refusal extends Error {}
/** Exit status 1 with the usage: the command line is wrong. */
class UsageError extends Error {}

interface Options {
  readonly from: string;
  readonly to: string;
  /** PARTITION_PERIOD, as the server reads it: the copied history's partitions are made with it. */
  readonly period: PartitionPeriod;
}

function parseOptions(argv: string[]): Options | 'help' {
  let values: { from?: string | undefined; to?: string | undefined; help?: boolean | undefined };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        from: { type: 'string' },
        to: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  if (values.help) return 'help';
  if (!values.from) throw new UsageError('--from <DATA_DIR> is required.');
  if (!values.to) throw new UsageError('--to <postgres://…> is required.');
  if (!isPostgresUrl(values.to) || !URL.canParse(values.to))
    throw new UsageError(
      '--to must be a PostgreSQL URL such as postgres://user:password@127.0.0.1:5432/school.',
    );
  const period = process.env.PARTITION_PERIOD?.trim() || 'month';
  if (!(PARTITION_PERIODS as readonly string[]).includes(period))
    throw new UsageError(`PARTITION_PERIOD must be ${PARTITION_PERIODS.join(' or ')}.`);
  return { from: path.resolve(values.from), to: values.to, period: period as PartitionPeriod };
}

/** The URL without its password, for printing. */
function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

const print = (line: string) => process.stdout.write(`${line}\n`);

/** Column names per table, as the schema (the same migrations on both sides) has them. */
async function columnsOf(db: Kysely<Database>): Promise<Map<string, { name: string; text: boolean }[]>> {
  const tables = await db.introspection.getTables();
  return new Map(
    tables
      .filter((t) => !t.name.startsWith('kysely_') && !t.name.startsWith('sqlite_'))
      .map((t) => [
        t.name,
        t.columns.map((c) => ({ name: c.name, text: /text|char|clob|blob|bytea/i.test(c.dataType) })),
      ]),
  );
}

/** Rows already in the target that a copy would collide with, per table (empty: may copy). */
async function occupied(trx: Transaction<Database>): Promise<string[]> {
  const found: string[] = [];
  for (const table of [...TABLES, 'book_chunks'] as const) {
    const n =
      table === 'templates'
        ? await count(trx, table, sql`WHERE type NOT IN (${sql.join(SEEDED_TEMPLATES)})`)
        : await count(trx, table);
    if (n > 0) {
      const besides = table === 'templates' ? ' besides the seeded defaults' : '';
      found.push(`${table}: ${n} row${n === 1 ? '' : 's'}${besides}`);
    }
  }
  return found;
}

async function count(db: Transaction<Database>, table: string, where = sql``): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM ${sql.table(table)} ${where}`.execute(
    db,
  );
  return Number(rows[0]?.n ?? 0);
}

/** Progress within a long table, every 2 s at most (the caller prints the total). */
function progress(what: string, total: number, unit: string) {
  let shown = Date.now();
  return (done: number) => {
    if (done >= total || Date.now() - shown < 2000) return;
    shown = Date.now();
    print(`  ${what}: ${done} of ${total} ${unit}…`);
  };
}

interface TableCopy {
  rows: number;
  /** Text values whose NUL characters became U+FFFD (PostgreSQL's text cannot hold NUL). */
  nulReplaced: number;
}

/**
 * Copies one table in id order, in batches bounded by row count, bind parameters and text size,
 * keeping ids.
 */
async function copyTable(
  src: Transaction<Database>,
  dst: Transaction<Database>,
  table: CopiedTable,
  columns: readonly { name: string; text: boolean }[],
  total: number,
  /** Changes a row on its way (an SMS's sealed text sealed again under the target's key). */
  transform: (row: Record<string, unknown>) => void = () => {},
): Promise<TableCopy> {
  const names = columns.map((c) => c.name);
  const textColumns = columns.filter((c) => c.text).map((c) => c.name);
  const perInsert = Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMETERS / names.length)));
  const size: RawBuilder<number> =
    textColumns.length === 0
      ? sql<number>`0`
      : sql<number>`${sql.join(
          textColumns.map((c) => sql`coalesce(length(${sql.ref(c)}), 0)`),
          sql` + `,
        )}`;
  const show = progress(table, total, 'rows');
  const result: TableCopy = { rows: 0, nulReplaced: 0 };
  let last = Number.MIN_SAFE_INTEGER;
  for (;;) {
    // First the ids and sizes of the next rows, to cut the batch before it grows too large.
    const { rows: sizes } = await sql<{ id: number; size: number }>`
      SELECT id, ${size} AS size FROM ${sql.table(table)} WHERE id > ${last} ORDER BY id LIMIT ${perInsert}`.execute(
      src,
    );
    if (sizes.length === 0) break;
    let through = last;
    let chars = 0;
    for (const s of sizes) {
      if (through !== last && chars + Number(s.size) > BATCH_TEXT_CHARS) break;
      chars += Number(s.size);
      through = s.id;
    }
    const { rows } = await sql<Record<string, unknown>>`
      SELECT ${sql.join(names.map((n) => sql.ref(n)))} FROM ${sql.table(table)}
      WHERE id > ${last} AND id <= ${through} ORDER BY id`.execute(src);
    for (const row of rows) {
      for (const name of textColumns) {
        const value = row[name];
        if (typeof value === 'string' && value.includes('\0')) {
          row[name] = value.replaceAll('\0', '\uFFFD');
          result.nulReplaced++;
        }
      }
      // A delivery an old SQLite process was sending when it stopped may have no lease. Its process
      // is gone (the SQLite server would mark it interrupted at its next start); an expired lease
      // lets the first PostgreSQL instance do the same.
      if (table === 'deliveries' && row.status === 'sending' && row.lease_until == null) row.lease_until = 0;
      transform(row);
    }
    await sql`
      INSERT INTO ${sql.table(table)} (${sql.join(names.map((n) => sql.ref(n)))})
      VALUES ${sql.join(rows.map((row) => sql`(${sql.join(names.map((n) => row[n]))})`))}`.execute(dst);
    result.rows += rows.length;
    last = through;
    show(result.rows);
  }
  return result;
}

/**
 * Each distinct book file (named by its SHA-256 under DATA_DIR/books) into `book_chunks`: chunks of
 * BOOK_CHUNK_BYTES numbered from 0, the last one shorter, as books/blobs.ts reads them. The bytes
 * are hashed on the way, so a damaged or missing file stops the copy instead of being served.
 */
async function copyBookBytes(
  src: Transaction<Database>,
  dst: Transaction<Database>,
  dataDir: string,
): Promise<{ files: number; bytes: number; chunks: number }> {
  const blobs = await src
    .selectFrom('books')
    .select(['sha256', (eb) => eb.fn.min('size').as('size'), (eb) => eb.fn.min('id').as('id')])
    .groupBy('sha256')
    .orderBy('sha256')
    .execute();
  const done = { files: 0, bytes: 0, chunks: 0 };
  const show = progress('book files', blobs.length, 'files');
  for (const blob of blobs) {
    const file = bookPath(dataDir, blob.sha256);
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(file, 'r');
    } catch (err) {
      throw new Error(
        `The file of book ${blob.id} is missing or unreadable: ${file} (${(err as NodeJS.ErrnoException).code ?? err}). Restore it, or delete the book in the console, and run again.`,
      );
    }
    try {
      const hash = createHash('sha256');
      let position = 0;
      let seq = 0;
      for (;;) {
        const group: { sha256: string; seq: number; data: Buffer }[] = [];
        while (group.length < CHUNKS_PER_INSERT) {
          const data = await readFully(handle, position, BOOK_CHUNK_BYTES);
          if (data.length === 0) break;
          hash.update(data);
          group.push({ sha256: blob.sha256, seq: seq++, data });
          position += data.length;
          if (data.length < BOOK_CHUNK_BYTES) break;
        }
        if (group.length === 0) break;
        await dst.insertInto('book_chunks').values(group).execute();
        done.chunks += group.length;
        if ((group.at(-1)?.data.length ?? 0) < BOOK_CHUNK_BYTES) break;
      }
      if (position !== Number(blob.size) || hash.digest('hex') !== blob.sha256) {
        throw new Error(
          `The file of book ${blob.id} does not hold the bytes uploaded (${position} bytes read, ${blob.size} recorded, or a different SHA-256): ${file}.`,
        );
      }
      done.bytes += position;
    } finally {
      await handle.close();
    }
    done.files++;
    show(done.files);
  }
  return done;
}

const refusal = (url: string, taken: readonly string[]) =>
  `Refused: ${redact(url)} already holds data (${taken.join('; ')}). migrate-data only fills an empty database; nothing was changed.`;

/**
 * PostgreSQL's time partitions (store/partitions.ts) for every period from the oldest row the
 * source holds in a partitioned table, and ahead as the server keeps them; answers how many.
 */
async function makePartitions(
  source: Kysely<Database>,
  target: Kysely<Database>,
  period: PartitionPeriod,
): Promise<number> {
  const partitions = createPartitions(target, period, [OUTBOX_TABLES]);
  let oldest: number | null = null;
  for (const { table, column } of partitions.tables) {
    const { rows } = await sql<{ t: number | null }>`SELECT min(${sql.ref(column)}) AS t FROM ${sql.table(
      table,
    )}`.execute(source);
    const t = rows[0]?.t;
    if (t !== null && t !== undefined) oldest = oldest === null ? Number(t) : Math.min(oldest, Number(t));
  }
  const now = Date.now();
  const made = oldest !== null && oldest < now ? await partitions.ensure(oldest, now) : [];
  made.push(...(await partitions.ensureAhead(now)));
  return made.length / partitions.tables.length;
}

/** Moves each identity past the largest id copied, so the next insert gets a new id. */
async function advanceIdentities(dst: Transaction<Database>): Promise<void> {
  for (const table of TABLES) {
    await sql`SELECT setval(pg_get_serial_sequence(${table}, 'id'), max(id)) FROM ${sql.table(table)}
      HAVING max(id) IS NOT NULL`.execute(dst);
  }
}

/**
 * SMS waiting to be sent keep their text sealed under the SQLite server's key file (or, from a
 * release before sealing, in clear in the payload). The PostgreSQL instances seal with
 * CODE_ENCRYPTION_KEY: each such text is opened and sealed again under it, so those codes are still
 * sent. Without CODE_ENCRYPTION_KEY in the environment the copy is refused when there are any.
 */
function reseal(dataDir: string): (row: Record<string, unknown>) => void {
  const sourceKey = path.join(dataDir, KEY_FILE);
  let from: Sealer | undefined;
  let to: Sealer | undefined;
  const targetKey = process.env.CODE_ENCRYPTION_KEY;
  return (row) => {
    if (row.kind !== 'sms') return;
    const clear = unsealedText({ status: String(row.status), payload: String(row.payload) });
    if (row.secret == null && clear?.text === undefined) {
      if (clear) row.payload = clear.payload;
      return;
    }
    if (targetKey === undefined)
      throw new Error(
        'Some SMS still wait to be sent: set CODE_ENCRYPTION_KEY to the key the PostgreSQL instances will use (the same on every instance), and run again.',
      );
    to ??= loadSealer({ key: targetKey, dataDir });
    let text: string;
    if (clear?.text !== undefined) text = clear.text;
    else {
      if (!fs.existsSync(sourceKey))
        throw new Error(`${sourceKey}, the key the SQLite server sealed auth codes with, is missing.`);
      from ??= loadSealer({ dataDir });
      text = from.open(String(row.secret), String(row.idempotency_key));
    }
    row.secret = to.seal(text, String(row.idempotency_key));
    if (clear) row.payload = clear.payload;
  };
}

async function migrate(options: Options): Promise<void> {
  const dbFile = path.join(options.from, 'school-messaging.db');
  // openDatabase would create an empty store; a mistyped --from should say so instead.
  if (!fs.existsSync(dbFile))
    throw new Error(`There is no SQLite store in ${options.from} (${dbFile} is missing).`);

  let source: OpenedDatabase | undefined;
  let target: OpenedDatabase | undefined;
  try {
    source = await openDatabase({ dataDir: options.from, synchronous: 'FULL', owners: [OUTBOX_TABLES] });
    if (source.dialect !== 'sqlite') throw new Error('--from must be a SQLite DATA_DIR.');
    target = await openDatabase({
      dataDir: options.from,
      synchronous: 'FULL',
      owners: [OUTBOX_TABLES],
      databaseUrl: options.to,
      poolSize: 2,
    });
    if (target.dialect === 'postgres' && !target.availability.status().up) {
      target.stopStarting();
      throw new Error(
        `${redact(options.to)} cannot be reached: ${target.availability.status().reason ?? 'unknown'}.`,
      );
    }
    const resealTexts = reseal(options.from);
    const sourceColumns = await columnsOf(source.db);
    const targetColumns = await columnsOf(target.db);
    // A table this command does not know (a later migration) must not be left behind silently.
    const unknown = [...sourceColumns.keys()].filter(
      (t) => !(TABLES as readonly string[]).includes(t) && !(t in NOT_COPIED),
    );
    if (unknown.length > 0)
      throw new Error(
        `migrate-data does not know the table(s) ${unknown.join(', ')}; it must be taught to copy them.`,
      );
    for (const table of TABLES) {
      const a = sourceColumns
        .get(table)
        ?.map((c) => c.name)
        .sort();
      const b = targetColumns
        .get(table)
        ?.map((c) => c.name)
        .sort();
      if (!a || !b || a.join() !== b.join())
        throw new Error(`The two databases' ${table} tables differ (${a?.join(', ')} / ${b?.join(', ')}).`);
    }

    print(`Copying ${options.from} (SQLite) into ${redact(options.to)} (PostgreSQL)…`);
    const started = Date.now();
    const dst = target.db;
    // The periods the copied history spans get their partitions first, so that its rows land in
    // them rather than in the default partition (a target that holds data is left as it is).
    const taken = await dst.transaction().execute(occupied);
    if (taken.length > 0) throw new Refusal(refusal(options.to, taken));
    const made = await makePartitions(source.db, dst, options.period);
    print(`  partitions: ${made} made, a ${options.period} each (PARTITION_PERIOD)`);
    const summary = await source.db.transaction().execute((src) =>
      dst.transaction().execute(async (trx) => {
        // No instance may write while the copy runs (its rows would collide with the ids kept),
        // and a second copy started at once waits here, then finds the tables full.
        await sql`LOCK TABLE ${sql.join([...TABLES, 'book_chunks'].map((t) => sql.table(t)))} IN EXCLUSIVE MODE`.execute(
          trx,
        );
        const taken = await occupied(trx);
        if (taken.length > 0) throw new Refusal(refusal(options.to, taken));
        await trx.deleteFrom('templates').execute();

        const tables = new Map<CopiedTable, TableCopy & { expected: number }>();
        let books = { files: 0, bytes: 0, chunks: 0 };
        for (const table of TABLES) {
          const expected = await count(src, table);
          const copied = await copyTable(
            src,
            trx,
            table,
            sourceColumns.get(table) ?? [],
            expected,
            table === 'deliveries' ? resealTexts : undefined,
          );
          tables.set(table, { ...copied, expected });
          print(`  ${table}: ${copied.rows} rows`);
          if (table === 'books') {
            books = await copyBookBytes(src, trx, options.from);
            print(`  book bytes: ${books.bytes} in ${books.files} file(s), ${books.chunks} chunk(s)`);
          }
        }
        await advanceIdentities(trx);

        // Verified before committing: a mismatch rolls everything back.
        const wrong: string[] = [];
        for (const [table, { expected }] of tables) {
          const actual = await count(trx, table);
          if (actual !== expected) wrong.push(`${table}: ${expected} in SQLite, ${actual} in PostgreSQL`);
        }
        const stored = await trx
          .selectFrom('book_chunks')
          .select([
            (eb) => eb.fn.countAll<number>().as('chunks'),
            sql<number>`coalesce(sum(length(data)), 0)`.as('bytes'),
          ])
          .executeTakeFirstOrThrow();
        if (Number(stored.chunks) !== books.chunks || Number(stored.bytes) !== books.bytes)
          wrong.push(`book_chunks: ${books.bytes} bytes read, ${stored.bytes} stored`);
        if (wrong.length > 0) throw new Error(`The copy does not match the source: ${wrong.join('; ')}.`);
        return { tables, books };
      }),
    );

    print('');
    print(`Copied and verified in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
    for (const [table, { rows }] of summary.tables)
      print(`  ${table.padEnd(18)} ${String(rows).padStart(10)} rows`);
    print(
      `  ${'book bytes'.padEnd(18)} ${String(summary.books.bytes).padStart(10)} (${summary.books.files} file(s), ${summary.books.chunks} chunk(s) of up to ${BOOK_CHUNK_BYTES} bytes)`,
    );
    const nul = [...summary.tables.values()].reduce((n, t) => n + t.nulReplaced, 0);
    if (nul > 0)
      print(
        `  ${nul} text value(s) held NUL characters, which PostgreSQL cannot store; they now hold U+FFFD.`,
      );
    print(
      'Sessions were not copied: staff log in again. Start the servers with DATABASE_URL set to the target.',
    );
  } finally {
    await target?.db.destroy();
    await source?.db.destroy();
  }
}

async function main(argv: string[]): Promise<number> {
  createFilesPrivately();
  try {
    const options = parseOptions(argv);
    if (options === 'help') {
      print(USAGE);
      return 0;
    }
    await migrate(options);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${USAGE}\n`);
      return 1;
    }
    if (err instanceof Refusal) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    process.stderr.write(
      `migrate-data failed, nothing was copied: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
