/**
 * Masked means gone (docs/security.md#sealed-codes): an auth code waiting to be sent is stored
 * only sealed, and once its SMS has settled it is in no file of the database at all — SQLite's
 * database, WAL and shared-memory files, PostgreSQL's data directory, WAL included.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KEY_FILE, loadSealer } from '../src/secrets/sealer.js';
import { CONSOLE_HEADERS, startTestApp, type TestApp, waitUntil } from './helpers.js';
import { privatePostgresAvailable, startPrivatePostgres } from './private-postgres.js';
import { type FakeServer, startFakeServer } from './providers/fake-server.js';

/** Codes no other byte of a store would hold by chance. */
const CODES = ['Q7X2K9', 'ZP4M8W', '583920', 'KJ72HX', '4096173', 'WQ9R3T'];
const PHONE = '+447911123456';
const NS = 'http://tempuri.org/';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).flatMap((e) => {
    const file = path.join(e.parentPath, e.name);
    return e.isFile() ? [file] : [];
  });
}

/** Which of `codes` appear in any file under `dir`, and where. */
function foundIn(dir: string, codes: readonly string[]): string[] {
  const found: string[] = [];
  for (const file of filesUnder(dir)) {
    const bytes = fs.readFileSync(file);
    for (const code of codes) {
      if (bytes.includes(Buffer.from(code, 'utf8')) || bytes.includes(Buffer.from(code, 'utf16le')))
        found.push(`${code} in ${path.relative(dir, file)}`);
    }
  }
  return found;
}

/** Sends each code once, over each door in turn. */
async function sendCodes(t: TestApp, codes: readonly string[]): Promise<void> {
  for (const [i, code] of codes.entries()) {
    const door = i % 4;
    let status: number;
    if (door === 0) {
      status = (
        await t.app.inject({
          method: 'POST',
          url: '/AuthCodeSending.asmx',
          headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
          payload: `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><AuthCode xmlns="${NS}"><code>${code}</code><phone>${PHONE}</phone></AuthCode></soap:Body></soap:Envelope>`,
        })
      ).statusCode;
    } else if (door === 1) {
      status = (
        await t.app.inject({
          method: 'GET',
          url: `/AuthCodeSending.asmx/AuthCode?code=${code}&phone=${encodeURIComponent(PHONE)}`,
        })
      ).statusCode;
    } else if (door === 2) {
      status = (
        await t.app.inject({
          method: 'POST',
          url: '/AuthCodeSending.asmx/AuthCode',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: `code=${code}&phone=${encodeURIComponent(PHONE)}`,
        })
      ).statusCode;
    } else {
      status = (
        await t.inject({
          method: 'POST',
          url: '/api/operations/AuthCode',
          headers: CONSOLE_HEADERS,
          payload: { code, phone: PHONE },
        })
      ).statusCode;
    }
    expect(status, code).toBe(200);
  }
}

/** A gateway that sends everything but refuses one code for good (its SMS goes dead). */
async function gatewayRefusing(code: string): Promise<FakeServer> {
  const gateway = await startFakeServer((r) =>
    r.body.includes(code) ? { status: 400, body: 'rejected' } : { status: 200, body: { id: 'm1' } },
  );
  cleanups.push(gateway.close);
  return gateway;
}

describe('sealed auth codes', () => {
  it('leaves no code in any SQLite file once each SMS has settled, or its validity passed', async () => {
    const deadCode = CODES[5] as string;
    const gateway = await gatewayRefusing(deadCode);
    const t = await startTestApp({
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: `${gateway.url}/send`,
      SMS_HTTP_BODY: 'to={to}&text={text}',
      // The refused one goes dead, and its validity passes soon after: its text must go then.
      AUTHCODE_TTL: '1500ms',
      DISPATCH_POLL_MS: '100',
    });
    let closed = false;
    cleanups.push(async () => {
      if (!closed) await t.close();
    });
    await sendCodes(t, CODES);
    // Each code reached the gateway, in clear, exactly as sent.
    await t.app.outbox.idle();
    for (const code of CODES)
      expect(
        gateway.requests.filter((r) => r.body.includes(code)),
        code,
      ).toHaveLength(1);
    // While it waits, a code is sealed: never in the row in clear.
    await waitUntil(async () => {
      const counts = await t.app.deliveryRollups.stateCounts();
      return counts.sent === CODES.length - 1 && counts.dead === 1;
    });
    // Past its validity the dead one's sealed text is destroyed too.
    await waitUntil(async () => {
      const rows = await t.app.store.db.selectFrom('deliveries').select('secret').execute();
      return rows.every((r) => r.secret === null);
    });
    // Every file the store keeps: the database, its WAL and shared memory, the key file.
    const dataDir = t.dataDir;
    const keyFile = path.join(dataDir, KEY_FILE);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(foundIn(dataDir, CODES)).toEqual([]);
    // Closing checkpoints the WAL into the database file: still nowhere.
    closed = true;
    await t.app.close();
    expect(foundIn(dataDir, CODES)).toEqual([]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  it('seals, at start, the codes a release before sealing left in clear, and still sends them', async () => {
    const gateway = await startFakeServer(() => ({ status: 200, body: { id: 'm1' } }));
    cleanups.push(gateway.close);
    const env = {
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: `${gateway.url}/send`,
      SMS_HTTP_BODY: 'to={to}&text={text}',
    };
    const first = await startTestApp({ ...env, SMS_HTTP_URL: 'http://127.0.0.1:9/unreachable' });
    const dataDir = first.dataDir;
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    // A pending SMS as the older release stored it: its text in the payload's JSON.
    const callId = await first.app.recorder.record({
      at: Date.now(),
      group_name: 'AuthCodeSending',
      operation: 'AuthCode',
      binding: 'http-get',
      caller_ip: '127.0.0.1',
      params: JSON.stringify({ code: '***', phone: PHONE }),
      outcome: 'ok',
      status: 200,
      duration_ms: 1,
      request: 'GET /AuthCodeSending.asmx/AuthCode?code=***',
      request_bytes: 1,
      response: 'HTTP/1.1 200',
      response_bytes: 1,
    });
    await first.app.outbox.stop();
    await first.app.store.db
      .insertInto('deliveries')
      .values({
        call_id: callId,
        kind: 'sms',
        provider: 'http',
        recipient: PHONE,
        payload: JSON.stringify({
          text: 'Your verification code is JV83QD',
          maskedText: 'Your verification code is ***',
        }),
        secret: null,
        status: 'pending',
        attempts: 0,
        next_attempt_at: Date.now(),
        lease_until: null,
        expires_at: Date.now() + 600_000,
        idempotency_key: 'legacy-key-1',
        created_at: Date.now(),
        updated_at: Date.now(),
      })
      .execute();
    await first.app.close();

    const second = await startTestApp(env, dataDir);
    await waitUntil(() => gateway.requests.length === 1);
    expect(gateway.requests[0]?.body).toContain('JV83QD');
    const [row] = await second.app.store.db.selectFrom('deliveries').selectAll().execute();
    expect(JSON.parse(row?.payload ?? '')).toEqual({ maskedText: 'Your verification code is ***' });
    await waitUntil(async () => (await second.app.deliveryRollups.stateCounts()).sent === 1);
    await second.close();
    expect(foundIn(dataDir, ['JV83QD'])).toEqual([]);
  }, 30_000);

  it('opens a sealed code only with its own key and for its own delivery', () => {
    const dir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'sealer-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const sealer = loadSealer({ dataDir: dir });
    const sealed = sealer.seal('Your code is 1234', 'key-a');
    expect(sealed).not.toContain('1234');
    expect(sealer.open(sealed, 'key-a')).toBe('Your code is 1234');
    // The same key file gives the same key; another delivery's context does not open it.
    expect(loadSealer({ dataDir: dir }).open(sealed, 'key-a')).toBe('Your code is 1234');
    expect(() => sealer.open(sealed, 'key-b')).toThrow(/did not open/);
    const other = loadSealer({ key: Buffer.alloc(32, 1).toString('base64'), dataDir: dir });
    expect(() => other.open(sealed, 'key-a')).toThrow(/another key/);
  });
});

const cluster = privatePostgresAvailable();
describe.skipIf(!cluster.ok)(
  `sealed auth codes on PostgreSQL${cluster.ok ? '' : ` (skipped: ${cluster.why})`}`,
  () => {
    it('never writes a code in clear: not in a row, a dead tuple or the WAL', async () => {
      const pg = await startPrivatePostgres();
      cleanups.push(() => pg.destroy());
      const deadCode = CODES[5] as string;
      const gateway = await gatewayRefusing(deadCode);
      const t = await startTestApp({
        DATABASE_URL: pg.url,
        SMS_PROVIDER: 'http',
        SMS_HTTP_URL: `${gateway.url}/send`,
        SMS_HTTP_BODY: 'to={to}&text={text}',
        DISPATCH_POLL_MS: '100',
      });
      await sendCodes(t, CODES);
      await t.app.outbox.idle();
      await t.close();
      for (const code of CODES)
        expect(
          gateway.requests.filter((r) => r.body.includes(code)),
          code,
        ).toHaveLength(1);
      // Everything PostgreSQL wrote: its tables, their dead tuples, and the WAL.
      await pg.stop();
      expect(foundIn(pg.dir, CODES)).toEqual([]);
    }, 60_000);
  },
);
