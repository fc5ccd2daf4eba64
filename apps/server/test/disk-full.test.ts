/**
 * A full disk is refused, not crashed into (docs/monitoring.md#faults), on SQLite. SQLite's own
 * SQLITE_FULL is produced here by capping the database's size (`PRAGMA max_page_count`), so these
 * run on any machine; faults.test.ts fills a real (tmpfs) disk where it may mount one.
 */
import fs from 'node:fs';
import { sql } from 'kysely';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CONSOLE_HEADERS, startTestApp, type TestApp, waitUntil } from './helpers.js';
import { gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

const NS = 'http://tempuri.org/';
const PHONE = '+447911123456';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(env: Record<string, string> = {}): Promise<{ t: TestApp; gateway: SmsGateway }> {
  const gateway = await startSmsGateway(20);
  cleanups.push(() => gateway.close());
  const t = await startTestApp({ ...gatewayEnv(gateway), DISPATCH_POLL_MS: '50', ...env });
  cleanups.push(() => t.close());
  return { t, gateway };
}

/** A form POST whose ignored extra field makes its raw record need new pages of the database. */
const bulkyPost = (code: string) => ({
  method: 'POST' as const,
  url: '/AuthCodeSending.asmx/AuthCode',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  payload: `code=${code}&phone=${encodeURIComponent(PHONE)}&note=${'x'.repeat(60_000)}`,
});

const soap11 = (code: string) => ({
  method: 'POST' as const,
  url: '/AuthCodeSending.asmx',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
  payload: `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><AuthCode xmlns="${NS}"><code>${code}</code><phone>${PHONE}</phone><note>${'y'.repeat(60_000)}</note></AuthCode></soap:Body></soap:Envelope>`,
});

/** Caps the database at the pages it has now: the next write that needs a page fails SQLITE_FULL. */
async function fillDatabase(t: TestApp): Promise<void> {
  const { rows } = await sql<{ page_count: number }>`PRAGMA page_count`.execute(t.app.store.db);
  await sql.raw(`PRAGMA max_page_count = ${Number(rows[0]?.page_count)}`).execute(t.app.store.db);
}

async function freeDatabase(t: TestApp): Promise<void> {
  await sql.raw('PRAGMA max_page_count = 1073741823').execute(t.app.store.db);
}

/** The disk as the server reads it from now on: `free()` bytes free, read at each check. */
function diskReads(free: () => number) {
  return vi.spyOn(fs.promises, 'statfs').mockImplementation(async () => ({
    type: 0,
    bsize: 4096,
    blocks: 1e9,
    bfree: free() / 4096,
    bavail: free() / 4096,
    files: 0,
    ffree: 0,
  }));
}

describe('a full disk (SQLite)', () => {
  it('answers a call it cannot record with 503 in its binding, checks the disk at once, and records again once there is room', async () => {
    const { t, gateway } = await start({ REFUSE_FREE_DISK_MB: '0' });
    const writeFoundFull = vi.spyOn(t.app.diskSpace, 'writeFoundFull');
    expect((await t.app.inject(bulkyPost('111111'))).statusCode).toBe(200);
    const before = await t.app.history.count();
    await fillDatabase(t);

    const get = await t.app.inject(bulkyPost('222222'));
    expect(get.statusCode).toBe(503);
    expect(get.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(get.headers['retry-after']).toBe('5');
    expect(get.body).toBe(
      'The service is temporarily unavailable; nothing was done. Try again in a few seconds.',
    );
    const soap = await t.app.inject(soap11('333333'));
    expect(soap.statusCode).toBe(500);
    expect(soap.headers['content-type']).toBe('text/xml; charset=utf-8');
    expect(soap.headers['retry-after']).toBe('5');
    expect(soap.body).toContain('<faultcode>soap:Server</faultcode>');
    expect(soap.body).toContain(
      '<faultstring>Server was unable to process request. ---&gt; The service is temporarily unavailable; nothing was done. Try again in a few seconds.</faultstring>',
    );
    // SQLITE_FULL made the server read the free space again there and then, and refuse calls
    // from then on whatever its thresholds (REFUSE_FREE_DISK_MB is 0 here).
    expect(writeFoundFull).toHaveBeenCalled();
    await waitUntil(() => t.app.diskSpace.refusing(), { what: 'calls refused' });
    expect(t.app.readiness.report()).toMatchObject({ ready: false, disk: 'full' });
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    // Nothing half-written: no record, no SMS for the refused calls.
    expect(await t.app.history.count()).toBe(before);
    await t.app.outbox.idle();
    expect(gateway.sent.map((m) => m.text)).toEqual(['Your code is 111111']);

    // Space freed: calls are taken again once the check sees it.
    await freeDatabase(t);
    const free = (await fs.promises.statfs(t.app.config.dataDir)).bavail * 4096 + 64 * 1024 * 1024;
    diskReads(() => free);
    t.app.diskSpace.checkNow();
    await waitUntil(() => !t.app.diskSpace.refusing(), { what: 'calls taken again' });
    expect((await t.app.inject(bulkyPost('444444'))).statusCode).toBe(200);
    await waitUntil(() => gateway.sent.length === 2);
    expect(gateway.sent.map((m) => m.text)).toEqual(['Your code is 111111', 'Your code is 444444']);
  });

  it('keeps the attempts it cannot record and records them later: no code is sent twice, leases or not', async () => {
    // Leases of 3 × 100 ms + 5 s: the disk stays full longer than that.
    const { t, gateway } = await start({ PROVIDER_TIMEOUT_MS: '100' });
    // The outbox records finished attempts on SQLite in the store's relaxed synchronous unit of
    // work: it fails there as SQLite would with the disk full.
    const { work } = t.app.store;
    const relaxedSync = work.relaxedSync.bind(work);
    let full = true;
    const refused: number[] = [];
    vi.spyOn(work, 'relaxedSync').mockImplementation(async (work) => {
      if (full) {
        refused.push(Date.now());
        throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      }
      return relaxedSync(work);
    });
    const codes = ['510001', '510002', '510003', '510004', '510005'];
    for (const code of codes) {
      const res = await t.app.inject({
        method: 'GET',
        url: `/AuthCodeSending.asmx/AuthCode?code=${code}&phone=${encodeURIComponent(PHONE)}`,
      });
      expect(res.statusCode).toBe(200);
    }
    await waitUntil(() => gateway.sent.length === codes.length);
    await waitUntil(() => refused.length > 0);
    // Past every lease, with the sweep running every 50 ms: nothing is taken back and resent.
    await new Promise((r) => setTimeout(r, 6000));
    expect(refused.length).toBeGreaterThan(1);
    full = false;
    await waitUntil(async () => (await t.app.deliveryRollups.stateCounts()).sent === codes.length);
    expect([...gateway.requestsByKey.values()]).toEqual(codes.map(() => 1));
    expect(gateway.sent.map((m) => m.text).sort()).toEqual(codes.map((c) => `Your code is ${c}`));
    const attempts = await t.app.store.db.selectFrom('delivery_attempts').select('outcome').execute();
    expect(attempts.map((a) => a.outcome)).toEqual(codes.map(() => 'sent'));
  }, 20_000);

  it('refuses new calls below REFUSE_FREE_DISK_MB before anything is written, and says so', async () => {
    const { t, gateway } = await start({ REFUSE_FREE_DISK_MB: '64', MIN_FREE_DISK_MB: '1024' });
    const cookie = await t.login();
    // The disk as the server reads it.
    let free = 10 * 1024 * 1024 * 1024;
    const statfs = diskReads(() => free);
    free = 20 * 1024 * 1024;
    t.app.diskSpace.checkNow();
    await waitUntil(() => t.app.diskSpace.refusing(), { what: 'the disk check' });
    expect(statfs).toHaveBeenCalled();
    const before = await t.app.history.count();
    const get = await t.app.inject({
      method: 'GET',
      url: `/AuthCodeSending.asmx/AuthCode?code=1234&phone=${encodeURIComponent(PHONE)}`,
    });
    expect(get.statusCode).toBe(503);
    expect(get.headers['retry-after']).toBe('30');
    const soap = await t.app.inject(soap11('5678'));
    expect(soap.statusCode).toBe(500);
    expect(soap.body).toContain('<faultcode>soap:Server</faultcode>');
    const send = await t.app.inject({
      method: 'POST',
      url: '/api/operations/AuthCode',
      headers: { ...CONSOLE_HEADERS, cookie },
      payload: { code: '9999', phone: PHONE },
    });
    expect(send.statusCode).toBe(503);
    expect(send.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(send.json().detail).toMatch(/disk .* nearly full/);
    // Nothing written, nothing sent; /readyz says why, /healthz stays 200, /metrics tells.
    expect(await t.app.history.count()).toBe(before);
    expect(gateway.requests).toBe(0);
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ disk: 'nearly full', reasons: [expect.stringMatching(/^disk: /)] });
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toMatchObject({
      status: 'ok',
      disk: 'nearly full',
    });
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^school_disk_refusing_calls 1$/m);
    expect(metrics).toMatch(/^school_ready 0$/m);
    expect(metrics).toMatch(/^school_calls_refused_total\{cause="disk"\} 3$/m);
    // Reads still work.
    expect(
      (await t.app.inject({ method: 'GET', url: '/api/calls', headers: { ...CONSOLE_HEADERS, cookie } }))
        .statusCode,
    ).toBe(200);

    free = 10 * 1024 * 1024 * 1024;
    t.app.diskSpace.checkNow();
    await waitUntil(() => !t.app.diskSpace.refusing(), { what: 'the disk check' });
    expect((await t.app.inject(soap11('2468'))).statusCode).toBe(200);
    await waitUntil(() => gateway.sent.length === 1);
  });
});
