import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOK_CHUNK_BYTES, bookPath } from '../src/books/blobs.js';
import { OUTBOX_TABLES } from '../src/outbox/index.js';
import { createSealer } from '../src/secrets/sealer.js';
import { type OpenedDatabase, openDatabase } from '../src/store/db.js';
import { COPIED_TABLES } from '../src/store/schema.js';
import { callRow, startTestApp, tempDataDir } from './helpers.js';
import { type FreshDatabase, freshPostgres, TEST_DATABASE_URL } from './pg.js';

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const command = path.join(serverDir, 'dist/migrate-data.js');

/** The tables the command copies, with ids kept. */
const TABLES = COPIED_TABLES;

function migrateData(...args: string[]) {
  return migrateDataWith({}, ...args);
}

function migrateDataWith(env: Record<string, string>, ...args: string[]) {
  const run = spawnSync(process.execPath, [command, ...args], {
    cwd: serverDir,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, CODE_ENCRYPTION_KEY: undefined, ...env },
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** A real PDF padded to `size` bytes with varied content, so that chunk order matters. */
function pdf(size: number): Buffer {
  const head = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n% ');
  const tail = Buffer.from('\ntrailer<</Root 1 0 R>>\n%%EOF\n');
  const body = Buffer.alloc(size - head.length - tail.length);
  for (let i = 0; i < body.length; i++) body[i] = 33 + ((i * 7919) % 90);
  return Buffer.concat([head, body, tail]);
}

const soap11 = (action: string, inner: string) => ({
  method: 'POST' as const,
  url: action === 'AuthCode' ? '/AuthCodeSending.asmx' : '/NotificationNotes.asmx',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"http://tempuri.org/${action}"` },
  payload: `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><${action} xmlns="http://tempuri.org/">${inner}</${action}></soap:Body></soap:Envelope>`,
});

/** Every row of a table in the SQLite store, by id. */
function sqliteRows(dataDir: string, table: string): Record<string, unknown>[] {
  const db = new SQLite(path.join(dataDir, 'school-messaging.db'), { readonly: true });
  try {
    return db.prepare(`SELECT * FROM ${table} ORDER BY id`).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

async function pgRows(pg: OpenedDatabase, table: string): Promise<Record<string, unknown>[]> {
  return (await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)} ORDER BY id`.execute(pg.db))
    .rows;
}

/** PostgreSQL's text cannot hold NUL: the command stores U+FFFD instead (docs/deployment.md). */
const withoutNul = (rows: Record<string, unknown>[]) =>
  rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [k, typeof v === 'string' ? v.replaceAll('\0', '\uFFFD') : v]),
    ),
  );

describe.skipIf(!TEST_DATABASE_URL)('migrate-data: a SQLite store into PostgreSQL', () => {
  const data = tempDataDir();
  const book = pdf(2 * BOOK_CHUNK_BYTES + 75_000);
  let target: FreshDatabase;
  let pg: OpenedDatabase;
  let first: ReturnType<typeof migrateData>;

  beforeAll(async () => {
    // Real content through the real endpoints: the SOAP doors, the console's API.
    const t = await startTestApp({ AUTHCODE_LIMIT_PER_PHONE: '5/15m' }, data.dir);
    try {
      for (const phone of ['+447911123456', '+447911123457']) {
        const res = await t.app.inject(soap11('AuthCode', `<code>4821</code><phone>${phone}</phone>`));
        expect(res.statusCode).toBe(200);
      }
      // A refused call whose raw request (kept in the record) holds a NUL.
      const nul = await t.app.inject(
        soap11('AuthCode', '<code>4821</code><phone>+4479\u000011123456</phone>'),
      );
      expect(nul.statusCode).not.toBe(200);
      const school = await t.inject({
        method: 'POST',
        url: '/api/schools',
        payload: { name: 'Example School', baseUrl: 'https://school.example.org/', topicKey: 'example' },
      });
      expect(school.statusCode).toBe(201);
      const template = await t.inject({
        method: 'POST',
        url: '/api/templates',
        payload: { type: 'homework', title: 'Homework', body: 'New homework for you.' },
      });
      expect(template.statusCode).toBe(201);
      const user = await t.inject({
        method: 'POST',
        url: '/api/users',
        payload: { username: 'ana', displayName: 'Ana', password: 'ana password 1', role: 'operator' },
      });
      expect(user.statusCode).toBe(201);
      // The same bytes for two classes: one file, stored once in PostgreSQL too.
      for (const classId of ['7B', '8C']) {
        const upload = await t.inject({
          method: 'PUT',
          url: `/api/books/2026-1/${classId}?filename=maths.pdf`,
          headers: { 'content-type': 'application/pdf' },
          payload: book,
        });
        expect(upload.statusCode).toBe(200);
      }
      const push = await t.app.inject(
        soap11(
          'SendNotificationType',
          '<id>42</id><baseUrlSchool>https://school.example.org/</baseUrlSchool><TypeNotfication>homework</TypeNotfication>',
        ),
      );
      expect(push.statusCode).toBe(200);
    } finally {
      await t.close();
    }
    target = await freshPostgres();
    first = migrateData('--from', data.dir, '--to', target.url);
    pg = await openDatabase({
      dataDir: data.dir,
      synchronous: 'NORMAL',
      databaseUrl: target.url,
      poolSize: 2,
      owners: [OUTBOX_TABLES],
    });
  }, 120_000);

  afterAll(async () => {
    await pg?.db.destroy();
    await target?.drop();
    data.remove();
  });

  it('copies every row with its id, says what it copied, and leaves the sessions behind', async () => {
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    for (const table of TABLES) {
      const source = sqliteRows(data.dir, table);
      if (table !== 'limit_slots') expect(source.length, table).toBeGreaterThan(0);
      expect(await pgRows(pg, table), table).toEqual(withoutNul(source));
      expect(first.stdout).toMatch(new RegExp(`\\b${table}\\s+${source.length} rows`));
    }
    // The copied history is in its periods' partitions, made first; none went to a default one.
    for (const table of ['calls', 'deliveries', 'delivery_attempts']) {
      const { rows } = await sql<{ part: string }>`
        SELECT DISTINCT tableoid::regclass::text AS part FROM ${sql.table(table)}`.execute(pg.db);
      expect(rows.length, table).toBeGreaterThan(0);
      for (const { part } of rows) expect(part, table).toMatch(new RegExp(`^${table}_p\\d{8}$`));
    }
    expect(first.stdout).toMatch(/partitions: \d+ made, a month each/);
    // The seeded default templates were replaced by the source's own rows.
    expect((await pgRows(pg, 'templates')).map((r) => r.type)).toEqual(['*', 'marks', 'homework']);
    // The NUL case was real, and reported.
    expect(sqliteRows(data.dir, 'calls').some((r) => String(r.request).includes('\0'))).toBe(true);
    expect(first.stdout).toContain('U+FFFD');
    expect(sqliteRows(data.dir, 'sessions').length).toBeGreaterThan(0);
    expect(await pgRows(pg, 'sessions')).toEqual([]);
    expect(first.stdout).toContain('Sessions were not copied: staff log in again.');
  });

  it("stores each book's bytes once, in 256 KiB chunks that reassemble to the upload", async () => {
    const [sha256, ...others] = new Set(sqliteRows(data.dir, 'books').map((b) => String(b.sha256)));
    expect(others).toEqual([]);
    const chunks = (
      await sql<{ sha256: string; seq: number; data: Buffer }>`
        SELECT sha256, seq, data FROM book_chunks ORDER BY sha256, seq`.execute(pg.db)
    ).rows;
    expect(chunks.map((c) => [c.sha256, c.seq, c.data.length])).toEqual([
      [sha256, 0, BOOK_CHUNK_BYTES],
      [sha256, 1, BOOK_CHUNK_BYTES],
      [sha256, 2, book.length - 2 * BOOK_CHUNK_BYTES],
    ]);
    expect(Buffer.concat(chunks.map((c) => c.data)).equals(book)).toBe(true);
    expect(first.stdout).toMatch(new RegExp(`book bytes\\s+${book.length} \\(1 file`));
  });

  it('gives rows inserted after the copy ids above the copied ones', async () => {
    const maxCall = Math.max(...sqliteRows(data.dir, 'calls').map((r) => Number(r.id)));
    const inserted = await pg.db
      .insertInto('calls')
      .values(callRow())
      .returning('id')
      .executeTakeFirstOrThrow();
    expect(inserted.id).toBe(maxCall + 1);
    for (const table of TABLES) {
      const max = Math.max(0, ...sqliteRows(data.dir, table).map((r) => Number(r.id)));
      const { rows } = await sql<{ next: number }>`
        SELECT nextval(pg_get_serial_sequence(${table}, 'id')) AS next`.execute(pg.db);
      expect(Number(rows[0]?.next), table).toBeGreaterThan(max);
    }
  });

  it('refuses a database that already holds data, with exit status 2, and changes nothing', async () => {
    const before = await pgRows(pg, 'calls');
    const again = migrateData('--from', data.dir, '--to', target.url);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/already holds data \(users: \d+ rows;.*calls: \d+ rows/);
    expect(again.stderr).toContain('nothing was changed');
    expect(await pgRows(pg, 'calls')).toEqual(before);
  });

  it('copies nothing when it cannot finish (a missing book file), and names the file', async () => {
    const copy = tempDataDir();
    const empty = await freshPostgres();
    try {
      fs.cpSync(data.dir, copy.dir, { recursive: true });
      const sha256 = String(sqliteRows(copy.dir, 'books')[0]?.sha256);
      fs.rmSync(bookPath(copy.dir, sha256));
      const failed = migrateData('--from', copy.dir, '--to', empty.url);
      expect(failed.status).toBe(1);
      expect(failed.stderr).toContain('nothing was copied');
      expect(failed.stderr).toContain(bookPath(copy.dir, sha256));
      const after = await openDatabase({
        dataDir: copy.dir,
        synchronous: 'NORMAL',
        databaseUrl: empty.url,
        owners: [OUTBOX_TABLES],
      });
      try {
        for (const table of TABLES) {
          const rows = await pgRows(after, table);
          expect(
            rows.map((r) => r.type ?? r.id),
            table,
          ).toEqual(table === 'templates' ? ['*', 'marks'] : []);
        }
        expect((await sql`SELECT * FROM book_chunks`.execute(after.db)).rows).toEqual([]);
      } finally {
        await after.db.destroy();
      }
    } finally {
      await empty.drop();
      copy.remove();
    }
  });

  it('explains itself, and refuses a folder without a store', () => {
    const help = migrateData('--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: pnpm migrate-data --from <DATA_DIR> --to <postgres://');
    const nowhere = migrateData(
      '--from',
      path.join(data.dir, 'nowhere'),
      '--to',
      'postgres://127.0.0.1/none',
    );
    expect(nowhere.status).toBe(1);
    expect(nowhere.stderr).toContain('There is no SQLite store in');
    expect(fs.existsSync(path.join(data.dir, 'nowhere'))).toBe(false);
  });
});

describe.skipIf(!TEST_DATABASE_URL)('migrate-data: SMS still waiting to be sent', () => {
  it("seals their text again under the PostgreSQL instances' key, and refuses without one", async () => {
    const data = tempDataDir();
    const target = await freshPostgres();
    try {
      // A gateway nobody answers: the codes stay pending, their text sealed with the key file.
      const t = await startTestApp(
        {
          SMS_PROVIDER: 'http',
          SMS_HTTP_URL: 'http://127.0.0.1:9/send',
          SMS_HTTP_BODY: 'to={to}&text={text}',
        },
        data.dir,
      );
      try {
        const res = await t.app.inject(soap11('AuthCode', '<code>Q4RT7Z</code><phone>+447911123456</phone>'));
        expect(res.statusCode).toBe(200);
      } finally {
        await t.close();
      }
      const [pending] = sqliteRows(data.dir, 'deliveries');
      expect(pending?.status).toBe('pending');
      expect(String(pending?.secret)).not.toContain('Q4RT7Z');

      const refused = migrateData('--from', data.dir, '--to', target.url);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(
        'set CODE_ENCRYPTION_KEY to the key the PostgreSQL instances will use',
      );

      const key = Buffer.alloc(32, 9).toString('base64');
      const copied = migrateDataWith({ CODE_ENCRYPTION_KEY: key }, '--from', data.dir, '--to', target.url);
      expect(copied.status, copied.stderr).toBe(0);
      const pg = await openDatabase({
        dataDir: data.dir,
        synchronous: 'NORMAL',
        databaseUrl: target.url,
        owners: [OUTBOX_TABLES],
      });
      try {
        const [row] = await pgRows(pg, 'deliveries');
        expect(row?.secret).not.toBe(pending?.secret);
        expect(String(row?.payload)).not.toContain('Q4RT7Z');
        const opened = createSealer(Buffer.from(key, 'base64')).open(
          String(row?.secret),
          String(row?.idempotency_key),
        );
        expect(opened).toBe('Your verification code is Q4RT7Z');
      } finally {
        await pg.db.destroy();
      }
    } finally {
      await target.drop();
      data.remove();
    }
  }, 60_000);
});
