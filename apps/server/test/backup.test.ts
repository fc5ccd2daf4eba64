/**
 * `pnpm admin backup`, `verify` and `restore` (docs/deployment.md#backups-and-restore): the built
 * command (dist/admin.js) run as a process beside the built server, as an operator would. A backup
 * taken while AuthCode calls keep coming is restored into a new DATA_DIR, and a server started on
 * it serves every call answered before the backup began, the same staff login, the same book's
 * bytes and, once the code key is put back, the codes that were waiting to be sent.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from './admin-process.js';
import { consoleFetch, tempDataDir, waitUntil } from './helpers.js';
import { type ServerProcess, startServerProcess, testPhone } from './server-process.js';
import { type SmsGateway, startSmsGateway } from './sms-gateway.js';

const admin = runAdmin;

/** A real PDF of `size` bytes whose body is not one repeated byte (a changed byte shows). */
function pdf(size: number): Buffer {
  const head = Buffer.from('%PDF-1.4\n% backup test\n');
  const tail = Buffer.from('\n%%EOF\n');
  const body = Buffer.alloc(size - head.length - tail.length);
  for (let i = 0; i < body.length; i++) body[i] = 32 + ((i * 7919) % 95);
  return Buffer.concat([head, body, tail]);
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Every folder and file under `dir` with its permission bits. */
function modes(dir: string): { path: string; mode: number; folder: boolean }[] {
  return [
    { path: '.', mode: fs.statSync(dir).mode & 0o777, folder: true },
    ...fs.readdirSync(dir, { recursive: true, withFileTypes: true }).map((e) => {
      const full = path.join(e.parentPath, e.name);
      return {
        path: path.relative(dir, full),
        mode: fs.statSync(full).mode & 0o777,
        folder: e.isDirectory(),
      };
    }),
  ];
}

const STAFF = { username: 'ana', password: 'ana password 12' };
/** Sent until told to stop: SMS stay waiting, their texts sealed, while the gateway refuses. */
const SERVER_ENV = {
  SMS_PROVIDER: 'http',
  SMS_HTTP_BODY: 'to={to}&text={text}',
  AUTHCODE_LIMIT_PER_PHONE: 'off',
  AUTHCODE_LIMIT_PER_IP: 'off',
  AUTHCODE_LIMIT_PER_RANGE: 'off',
  ASMX_LIMIT_PER_IP: 'off',
  DELIVERY_MAX_ATTEMPTS: '100',
  DELIVERY_RETRY_BASE_MS: '50',
  DELIVERY_RETRY_MAX_MS: '300',
  DISPATCH_POLL_MS: '50',
};

describe('pnpm admin backup and restore (SQLite)', () => {
  const temp = tempDataDir();
  const dataDir = path.join(temp.dir, 'data');
  const backupDir = path.join(temp.dir, 'backup');
  const book = pdf(300_000);
  let gateway: SmsGateway;
  let source: ServerProcess;
  const stops: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    gateway = await startSmsGateway();
    gateway.refusing = 503;
    source = await startServerProcess(
      { ...SERVER_ENV, DATA_DIR: dataDir, SMS_HTTP_URL: `${gateway.url}/send` },
      { timeoutMs: 50_000 },
    );
    stops.push(() => source.stop());
  }, 60_000);
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await gateway.close();
    temp.remove();
  });

  it('takes a backup while calls keep coming; restored, a server serves every call answered before it, the same login and book', async () => {
    const made = await admin(
      ['users', 'create', STAFF.username, '--role', 'operator', '--password-stdin'],
      { DATA_DIR: dataDir },
      `${STAFF.password}\n`,
    );
    expect(made.status).toBe(0);
    const api = await consoleFetch(source.url);
    const upload = await api('/api/books/2026-1/7B?filename=maths.pdf', {
      method: 'PUT',
      headers: { 'content-type': 'application/pdf' },
      body: book,
    });
    expect(upload.status).toBe(200);

    // AuthCode calls, four at a time, from before the backup until after it.
    const answered: { phone: string; code: string; at: number }[] = [];
    let sending = true;
    let next = 0;
    const senders = Array.from({ length: 4 }, async () => {
      while (sending) {
        const n = next++;
        const phone = testPhone(n);
        const code = String(100_000 + n);
        const res = await fetch(
          `${source.url}/AuthCodeSending.asmx/AuthCode?code=${code}&phone=${encodeURIComponent(phone)}`,
        );
        await res.arrayBuffer();
        if (res.status === 200) answered.push({ phone, code, at: Date.now() });
      }
    });
    await waitUntil(() => answered.length >= 100, { timeoutMs: 20_000, what: '100 calls answered' });
    const began = Date.now();
    const acknowledged = answered.filter((a) => a.at <= began);
    const backup = await admin(['backup', backupDir], { DATA_DIR: dataDir });
    const ended = Date.now();
    sending = false;
    await Promise.all(senders);

    expect(backup.stderr).toBe('');
    expect(backup.status).toBe(0);
    expect(backup.stdout).toMatch(/^Backed up .* in \d+\.\d s:\n {2}the database as of /);
    expect(backup.stdout).toContain('1 book: 0.3 MB, each checked against its SHA-256');
    expect(backup.stdout).toContain('not the code key (code-encryption.key)');
    // The server kept answering while the backup ran.
    expect(answered.filter((a) => a.at > began && a.at < ended).length).toBeGreaterThan(0);

    // The manifest: what was taken, each file's size and SHA-256; private files; no key.
    const manifest = JSON.parse(fs.readFileSync(path.join(backupDir, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({
      format: 'school-messaging-backup',
      formatVersion: 1,
      serverVersion: expect.stringMatching(/^\d+\.\d+\.\d+/),
      migration: expect.stringMatching(/^\d{4}_/),
      store: 'sqlite',
      withKey: false,
      counts: { users: 2, books: 1 },
    });
    expect(Date.parse(manifest.createdAt)).toBeGreaterThanOrEqual(began);
    expect(manifest.counts.sealedTexts).toBeGreaterThan(0);
    const bookEntry = `books/${sha256(book).slice(0, 2)}/${sha256(book)}.pdf`;
    expect(manifest.files.map((f: { path: string }) => f.path).sort()).toEqual([
      bookEntry,
      'school-messaging.db',
    ]);
    for (const f of manifest.files) {
      const bytes = fs.readFileSync(path.join(backupDir, f.path));
      expect({ path: f.path, size: bytes.length, sha256: sha256(bytes) }).toEqual(f);
    }
    expect(modes(backupDir).filter((m) => m.mode !== (m.folder ? 0o700 : 0o600))).toEqual([]);

    expect(await admin(['verify', backupDir], {})).toMatchObject({
      status: 0,
      stdout: expect.stringContaining('is whole: 2 files'),
    });

    // Restored into a new DATA_DIR: the key must be put back for the codes waiting.
    const restoredDir = path.join(temp.dir, 'restored');
    const restored = await admin(['restore', backupDir], { DATA_DIR: restoredDir });
    expect(restored.stderr).toBe('');
    expect(restored.status).toBe(0);
    expect(restored.stdout).toContain(`Restored ${backupDir} into ${restoredDir}.`);
    expect(restored.stdout).toMatch(
      /The code key is not in the backup, and it seals \d+ SMS waiting to be sent or retried \(auth codes\)\. Before starting the server, put the key back: CODE_ENCRYPTION_KEY .* or the file code-encryption\.key/,
    );
    expect(modes(restoredDir).filter((m) => m.mode !== (m.folder ? 0o700 : 0o600))).toEqual([]);

    // Every call answered before the backup began is in the restored database.
    const db = new SQLite(path.join(restoredDir, 'school-messaging.db'), { readonly: true });
    const phones = new Set(
      (db.prepare('SELECT phone FROM calls WHERE phone IS NOT NULL').all() as { phone: string }[]).map(
        (r) => r.phone,
      ),
    );
    const restoredCalls = phones.size;
    db.close();
    expect(acknowledged.filter((a) => !phones.has(a.phone))).toEqual([]);
    expect(acknowledged.length).toBeGreaterThanOrEqual(100);

    // The key put back as restore says; a server on the restored DATA_DIR, the gateway taking SMS.
    fs.copyFileSync(path.join(dataDir, 'code-encryption.key'), path.join(restoredDir, 'code-encryption.key'));
    await source.stop();
    gateway.refusing = undefined;
    const copy = await startServerProcess(
      { ...SERVER_ENV, DATA_DIR: restoredDir, SMS_HTTP_URL: `${gateway.url}/send` },
      { timeoutMs: 50_000 },
    );
    stops.push(() => copy.stop());
    const staff = await consoleFetch(copy.url, STAFF.username, STAFF.password);
    const count = await (await staff('/api/calls/count')).json();
    expect(count).toEqual({ count: restoredCalls, more: false });
    const last = acknowledged[acknowledged.length - 1] as (typeof acknowledged)[number];
    const found = (await (await staff(`/api/calls?phone=${encodeURIComponent(last.phone)}`)).json()) as {
      items: unknown[];
    };
    expect(found.items).toHaveLength(1);
    const file = await fetch(`${copy.url}/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=&classId=7B`);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(book)).toBe(true);
    // Codes waiting at the backup open with the key put back, and are sent.
    const waiting = new Map(acknowledged.map((a) => [a.phone, a.code]));
    await waitUntil(() => gateway.sent.some((s) => waiting.has(s.to)), {
      timeoutMs: 20_000,
      what: 'a code waiting at the backup sent',
    });
    const sent = gateway.sent.find((s) => waiting.has(s.to)) as SmsGateway['sent'][number];
    expect(sent.text).toContain(waiting.get(sent.to));
    await copy.stop();
  }, 120_000);

  it('with --with-key, the code key goes in, listed in the manifest, and comes back', async () => {
    const withKey = path.join(temp.dir, 'with-key');
    const backup = await admin(['backup', withKey, '--with-key'], { DATA_DIR: dataDir });
    expect(backup.status).toBe(0);
    expect(backup.stdout).toContain(
      'the code key (code-encryption.key): keep this backup as safe as the configuration',
    );
    const key = fs.readFileSync(path.join(dataDir, 'code-encryption.key'));
    const manifest = JSON.parse(fs.readFileSync(path.join(withKey, 'manifest.json'), 'utf8'));
    expect(manifest.withKey).toBe(true);
    expect(manifest.files).toContainEqual({
      path: 'code-encryption.key',
      size: key.length,
      sha256: sha256(key),
    });
    const target = path.join(temp.dir, 'restored-with-key');
    const restored = await admin(['restore', withKey], { DATA_DIR: target });
    expect(restored.status).toBe(0);
    expect(restored.stdout).toContain('The code key was restored (code-encryption.key).');
    expect(fs.readFileSync(path.join(target, 'code-encryption.key')).equals(key)).toBe(true);
  });

  it('restore refuses a DATA_DIR that holds data, and a backup with one byte changed, naming the file', async () => {
    const altered = path.join(temp.dir, 'altered');
    fs.cpSync(backupDir, altered, { recursive: true });
    const manifest = JSON.parse(fs.readFileSync(path.join(altered, 'manifest.json'), 'utf8'));
    const bookEntry = manifest.files.find((f: { path: string }) => f.path.startsWith('books/')).path;
    const bytes = fs.readFileSync(path.join(altered, bookEntry));
    bytes[150_000] = (bytes[150_000] as number) ^ 1;
    fs.writeFileSync(path.join(altered, bookEntry), bytes);
    const target = path.join(temp.dir, 'not-restored');

    const [over, refused, verified, none] = await Promise.all([
      admin(['restore', backupDir], { DATA_DIR: dataDir }),
      admin(['restore', altered], { DATA_DIR: target }),
      admin(['verify', altered], {}),
      admin(['restore', temp.dir], { DATA_DIR: path.join(temp.dir, 'not-restored-either') }),
    ]);
    expect(over.status).toBe(3);
    expect(over.stderr).toContain(`${dataDir} already holds data (`);
    expect(over.stderr).toContain('a backup is restored only into an empty DATA_DIR');
    expect(refused.status).toBe(4);
    expect(refused.stderr).toContain(
      `The backup in ${altered} does not match its manifest:\n  ${bookEntry}: its SHA-256 is `,
    );
    expect(refused.stderr).toContain('Nothing was restored.');
    expect(fs.existsSync(target)).toBe(false);
    expect(verified.status).toBe(4);
    expect(verified.stderr).toContain(`  ${bookEntry}: its SHA-256 is `);
    expect(none).toMatchObject({
      status: 4,
      stderr: `${temp.dir} holds no manifest.json: it is not a backup, or one that did not finish.\n`,
    });
  });

  it('backup refuses a folder that is not empty or is inside DATA_DIR, and does nothing with DATABASE_URL set', async () => {
    const elsewhere = path.join(temp.dir, 'pg-backup');
    const pg = { DATABASE_URL: 'postgres://school@127.0.0.1:1/school', DATA_DIR: dataDir };
    const [again, inside, backup, restore, help] = await Promise.all([
      admin(['backup', backupDir], { DATA_DIR: dataDir }),
      admin(['backup', path.join(dataDir, 'backups')], { DATA_DIR: dataDir }),
      admin(['backup', elsewhere], pg),
      admin(['restore', backupDir], { ...pg, DATA_DIR: path.join(temp.dir, 'pg-data') }),
      admin(['backup', '--help'], {}),
    ]);
    expect(again.status).toBe(3);
    expect(again.stderr).toContain('is not empty: a backup goes into a new or empty folder');
    expect(inside.status).toBe(3);
    expect(inside.stderr).toContain('is inside DATA_DIR');
    expect(fs.existsSync(path.join(dataDir, 'backups'))).toBe(false);
    expect(backup.status).toBe(3);
    expect(backup.stderr).toMatch(
      /^DATABASE_URL is set: .*pg_dump.*docs\/deployment\.md#backups-and-restore/,
    );
    expect(fs.existsSync(elsewhere)).toBe(false);
    expect(restore.status).toBe(3);
    expect(restore.stderr).toContain('pg_restore');
    expect(fs.existsSync(path.join(temp.dir, 'pg-data'))).toBe(false);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: pnpm admin backup DIR \[--with-key\]/);
  });
});
