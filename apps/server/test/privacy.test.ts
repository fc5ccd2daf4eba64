/**
 * A parent's phone number (issue 45): `GET /api/privacy/report` finds everything held about it
 * however it is typed — the calls whose phone it is, and those whose texts hold it in any spelling,
 * their deliveries and attempts, the audit entries naming it — as JSON or CSV; `POST
 * /api/privacy/erase` cancels what is on its way to it and leaves `[erased]` in its place
 * everywhere, counts and the Dashboard unchanged, audited by a keyed hash. On both databases
 * (PostgreSQL with daily partitions: the rows spread over several).
 */
import type {
  CallCount,
  CallDetail,
  CallList,
  DeliveryList,
  PrivacyErasure,
  PrivacyReport,
  Stats,
} from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../src/auth/password.js';
import { phoneForms } from '../src/privacy/phone-forms.js';
import { CONSOLE_HEADERS, callRow, TEST_ADMIN, type TestApp, waitUntil } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';
import { fallbackGatewayEnv, gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

/** The parent's number, and its digits as they could be found in any text. */
const PHONE = '+447458913276';
const DIGITS = ['447458913276', '07458913276', '7458913276'];
/** Written apart: what a regular expression on the raw texts looks for. */
const ANY_SPELLING = /7\D{0,3}4\D{0,3}5\D{0,3}8\D{0,3}9\D{0,3}1\D{0,3}3\D{0,3}2\D{0,3}7\D{0,3}6/;
/** Another parent in the same range: nothing of theirs changes. */
const OTHER = '+447458913999';
/** A code whose digits the number holds (the masking overlap: it is masked where it stands). */
const OVERLAPPING_CODE = '3276';

const NS = 'http://tempuri.org/';
const soap = (code: string, phone: string) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>` +
  `<AuthCode xmlns="${NS}"><code>${code}</code><phone>${phone}</phone></AuthCode></soap:Body></soap:Envelope>`;

describe('phoneForms', () => {
  const forms = phoneForms('07458 913276', 'GB');
  it('reads the number as the operations do, and finds it however it is written', () => {
    expect(forms?.e164).toBe(PHONE);
    for (const text of [
      '+447458913276',
      '+44 7458 913276',
      '+44 (0) 7458 913276',
      '07458 913276',
      '07458-913-276',
      '0044 7458 913276',
      'phone=%2B447458913276&x=1',
      'phone=07458+913276',
      '447458913276',
      '<phone>7458913276</phone>',
    ]) {
      expect(forms?.holds(text), text).toBe(true);
      expect(forms?.scrub(text), text).not.toMatch(ANY_SPELLING);
      expect(forms?.scrub(text), text).toContain('[erased]');
    }
  });
  it('leaves other numbers, and numbers that merely contain its digits, alone', () => {
    for (const text of ['+447458913999', '174589132761', '7458913276123', 'code 3276']) {
      expect(forms?.holds(text), text).toBe(false);
      expect(forms?.scrub(text)).toBe(text);
    }
  });
  it('reads no number from what is none', () => {
    expect(phoneForms('hello', 'GB')).toBeUndefined();
    expect(phoneForms('07458 913276', undefined)).toBeUndefined();
  });
});

describe.each(DIALECTS)('a parent’s number: report and erasure (%s)', (dialect) => {
  let t: TestApp;
  /** The primary SMS gateway refuses every code, naming the number; the fallback sends them. */
  let gateway: SmsGateway;
  let fallback: SmsGateway;
  let otherCall: number;
  let legacyCall: number;
  /** Calls that hold the number in one text alone, their note or their error (no phone). */
  let noteCall: number;
  let errorCall: number;
  let before: { count: CallCount; stats: Stats };

  const json = async <T>(url: string): Promise<T> => {
    const res = await t.inject({ method: 'GET', url });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as T;
  };
  const report = (phone: string) =>
    json<PrivacyReport>(`/api/privacy/report?phone=${encodeURIComponent(phone)}`);
  const figures = async () => ({
    count: await json<CallCount>('/api/calls/count'),
    stats: await json<Stats>('/api/stats?bucket=day&from=2026-01-01T00:00:00Z'),
  });
  /** Every text the database holds of the tables that can hold the number. */
  const everyText = async (): Promise<string> => {
    const db = t.app.store.db;
    const parts = await Promise.all([
      db.selectFrom('calls').selectAll().execute(),
      db.selectFrom('deliveries').selectAll().execute(),
      db.selectFrom('delivery_attempts').selectAll().execute(),
      db.selectFrom('audit').selectAll().execute(),
      db.selectFrom('call_error_hours').selectAll().execute(),
      db.selectFrom('school_call_error_hours').selectAll().execute(),
      db.selectFrom('limit_slots').selectAll().execute(),
    ]);
    return JSON.stringify(parts);
  };

  beforeAll(async () => {
    gateway = await startSmsGateway();
    fallback = await startSmsGateway();
    // The primary refuses, naming the number in its answer (as Twilio's do): each code is tried
    // on the fallback at once, which sends it.
    gateway.refusing = 503;
    gateway.refusal = JSON.stringify({ error: 'number {to} is unreachable just now' });
    t = await startTestAppOn(dialect, {
      ...gatewayEnv(gateway),
      ...fallbackGatewayEnv(fallback),
      DEFAULT_PHONE_REGION: 'GB',
      // A code the fallback refuses too waits a minute for its next try (the cancellation's case).
      DELIVERY_RETRY_BASE_MS: '60000',
      PARTITION_PERIOD: 'day',
    });
    const { app } = t;
    // SOAP, the number international with spaces and a code its digits hold.
    const soapRes = await app.inject({
      method: 'POST',
      url: '/AuthCodeSending.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
      payload: soap(OVERLAPPING_CODE, '+44 7458 913276'),
    });
    expect(soapRes.statusCode, soapRes.body).toBe(200);
    // HTTP GET, national; HTTP POST, 00 and a dash, a form's + for a space.
    expect(
      (await app.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode?code=5521&phone=07458913276' }))
        .statusCode,
    ).toBe(200);
    expect(
      (
        await app.inject({
          method: 'POST',
          url: '/AuthCodeSending.asmx/AuthCode',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: 'code=8810&phone=0044+7458-913276',
        })
      ).statusCode,
    ).toBe(200);
    // Send, from the console: audited with its parameters.
    const sent = await t.inject({
      method: 'POST',
      url: '/api/operations/AuthCode',
      payload: { code: '6402', phone: '07458 913276' },
    });
    expect(sent.statusCode, sent.body).toBe(200);
    // Another parent's code.
    await app.inject({
      method: 'GET',
      url: `/AuthCodeSending.asmx/AuthCode?code=1111&phone=${encodeURIComponent(OTHER)}`,
    });
    otherCall = (await app.history.list({ limit: 1 }))[0]?.id as number;
    // A call recorded before calls kept their phone (no phone column), weeks ago: another
    // partition on PostgreSQL.
    const legacy = await app.store.db
      .insertInto('calls')
      .values(
        callRow({
          at: Date.now() - 20 * 86_400_000,
          phone: null,
          params: JSON.stringify({ code: '***', phone: '07458-913-276' }),
          request: 'GET /AuthCodeSending.asmx/AuthCode?code=***&phone=07458-913-276 HTTP/1.1\r\n\r\n',
          outcome: 'client-error',
          status: 400,
          error: 'Invalid phone: 07458-913-276 was refused.',
        }),
      )
      .returning('id')
      .executeTakeFirstOrThrow();
    legacyCall = legacy.id;
    // A notification whose note alone names the number (the office's words, say), and a call of
    // another parent whose error alone does (a gateway's refusal quoting it): neither's phone,
    // parameters, request nor answer hold it.
    const inserted = async (row: Parameters<typeof callRow>[0]) =>
      (await app.store.db.insertInto('calls').values(callRow(row)).returning('id').executeTakeFirstOrThrow())
        .id;
    noteCall = await inserted({
      at: Date.now() - 2 * 86_400_000,
      group_name: 'NotificationNotes',
      operation: 'SendNotificationType',
      phone: null,
      params: JSON.stringify({
        id: '5',
        TypeNotfication: 'trip',
        baseUrlSchool: 'https://school.example.org/',
      }),
      request: 'GET /NotificationNotes.asmx/SendNotificationType?id=5&TypeNotfication=trip HTTP/1.1\r\n\r\n',
      note: 'Push queued; the office is to ring the parent on 07458 913276 too.',
    });
    errorCall = await inserted({
      at: Date.now() - 3 * 86_400_000,
      phone: '+447911123456',
      outcome: 'server-error',
      status: 500,
      error: 'SMS gateway: 07458-913-276 is not +447911123456 (refused).',
    });
    await waitUntil(() => fallback.sent.length >= 5, { what: 'every code sent' });
    // The Dashboard's errors by text, rolled up, quoting the number: the organisation's, and a
    // school's (the roll-ups per school).
    const rolledError = {
      hour: 1_790_000_000_000 - (1_790_000_000_000 % 3_600_000),
      operation: 'AuthCode',
      status: 400,
      outcome: 'client-error',
      error: 'Invalid phone: 07458-913-276 was refused.',
      count: 3,
    } as const;
    await app.store.db.insertInto('call_error_hours').values(rolledError).execute();
    await app.store.db
      .insertInto('school_call_error_hours')
      .values({ ...rolledError, school_id: 1, count: 2 })
      .execute();
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await gateway?.close();
    await fallback?.close();
  });

  it('reports every call, delivery, attempt and audit entry that holds the number, however it is typed', async () => {
    const typed = ['+44 7458 913276', '07458913276', '0044 7458-913276', '+44 (0)7458.913.276'];
    const reports = await Promise.all(typed.map(report));
    for (const r of reports) expect(r).toEqual({ ...reports[0], generatedAt: r.generatedAt });
    const r = reports[0] as PrivacyReport;
    expect(r.phone).toBe(PHONE);
    expect(r.forms).toEqual(expect.arrayContaining([PHONE, '+44 7458 913276', '07458 913276']));
    // Four codes, and the legacy call found by its text alone; the calls that name it only in
    // their note or their error.
    expect(r.calls).toHaveLength(7);
    expect(r.calls.map((c) => c.id)).toContain(legacyCall);
    expect(r.calls.map((c) => c.id)).not.toContain(otherCall);
    const legacy = r.calls.find((c) => c.id === legacyCall);
    expect(legacy?.heldIn).toEqual(['params', 'request', 'error']);
    expect(r.calls.find((c) => c.id === noteCall)).toMatchObject({
      heldIn: ['note'],
      note: 'Push queued; the office is to ring the parent on 07458 913276 too.',
    });
    expect(r.calls.find((c) => c.id === errorCall)?.heldIn).toEqual(['error']);
    const texts = [legacyCall, noteCall, errorCall];
    for (const c of r.calls.filter((c) => !texts.includes(c.id))) {
      expect(c.heldIn).toEqual(expect.arrayContaining(['phone', 'params', 'request', 'note']));
    }
    // The code is masked where it stands, never inside the number.
    const soapCall = r.calls.find((c) => c.binding === 'soap11');
    expect(soapCall?.request).toContain('<code>***</code><phone>+44 7458 913276</phone>');
    // The four SMS, each with a refused attempt naming the number and one that was sent.
    expect(r.deliveries).toHaveLength(4);
    for (const d of r.deliveries) {
      expect(d.recipient).toBe(PHONE);
      expect(d.attemptLog.some((a) => a.outcome === 'sent')).toBe(true);
    }
    expect(r.deliveries.flatMap((d) => d.attemptLog).some((a) => a.response?.includes(PHONE))).toBe(true);
    // The console's send.
    expect(r.audit.map((e) => e.action)).toEqual(['send']);
    expect(r.audit[0]?.details).toMatchObject({ params: { phone: PHONE } });
    // The other parent's report holds only their own call.
    const other = await report(OTHER);
    expect(other.calls.map((c) => c.id)).toEqual([otherCall]);
  });

  it('gives the report as a CSV download', async () => {
    for (const ask of [
      { url: `/api/privacy/report?phone=${encodeURIComponent(PHONE)}&format=csv` },
      { url: `/api/privacy/report?phone=${encodeURIComponent(PHONE)}`, headers: { accept: 'text/csv' } },
    ]) {
      const res = await t.inject({ method: 'GET', ...ask });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.headers['content-disposition']).toMatch(
        /^attachment; filename="privacy-report-\d{8}T\d{6}\.csv"$/,
      );
      expect(res.headers['cache-control']).toBe('no-store');
      const lines = res.body.trimEnd().split('\r\n');
      expect(lines[0]).toBe('record,id,callId,deliveryId,at,what,status,detail');
      const records = lines.slice(1).map((l) => l.split(',')[0]);
      expect(records.filter((r) => r === 'number')).toHaveLength(1);
      expect(records.filter((r) => r === 'call')).toHaveLength(7);
      expect(records.filter((r) => r === 'delivery')).toHaveLength(4);
      expect(records.filter((r) => r === 'attempt').length).toBeGreaterThanOrEqual(5);
      expect(records.filter((r) => r === 'audit')).toHaveLength(1);
      // A number's leading + would start a formula in a spreadsheet: defused.
      expect(lines[1]).toContain(`,'${PHONE},`);
    }
  });

  it('refuses what is no phone number with a problem, and staff who are not admins', async () => {
    const res = await t.inject({ method: 'GET', url: '/api/privacy/report?phone=not%20a%20number' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().errors).toHaveProperty('phone');
    const erase = await t.inject({ method: 'POST', url: '/api/privacy/erase', payload: { phone: '12' } });
    expect(erase.statusCode).toBe(400);

    await t.app.store.users.create({
      username: 'office',
      display_name: 'Office',
      role: 'operator',
      password_hash: await hashPassword('office password 123'),
    });
    const cookie = await t.login('office', 'office password 123');
    for (const ask of [
      { method: 'GET' as const, url: `/api/privacy/report?phone=${encodeURIComponent(PHONE)}` },
      { method: 'POST' as const, url: '/api/privacy/erase', payload: { phone: PHONE } },
    ]) {
      const res = await t.app.inject({ ...ask, headers: { cookie, ...CONSOLE_HEADERS } });
      expect(res.statusCode, ask.url).toBe(403);
    }
  });

  it('audits the report by the keyed hash of the number, never the number', async () => {
    const rows = await t.app.store.db
      .selectFrom('audit')
      .selectAll()
      .where('action', '=', 'privacy-report')
      .execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(JSON.stringify(row)).not.toMatch(ANY_SPELLING);
      expect(JSON.parse(row.details ?? '{}').hash).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it('cancels a code still on its way: it is never sent after the erasure returns', async () => {
    // The fallback refuses too: the next code waits a minute for its next try.
    fallback.refusing = 503;
    const res = await t.app.inject({
      method: 'GET',
      url: '/AuthCodeSending.asmx/AuthCode?code=7070&phone=07458913276',
    });
    expect(res.statusCode).toBe(200);
    await waitUntil(async () => {
      const rows = await t.app.store.db
        .selectFrom('deliveries')
        .select('status')
        .where('recipient', '=', PHONE)
        .where('status', 'in', ['pending', 'sending'])
        .execute();
      return rows.length === 1;
    });
    before = await figures();

    const erase = await t.inject({
      method: 'POST',
      url: '/api/privacy/erase',
      payload: { phone: '+44 7458 913276' },
    });
    expect(erase.statusCode, erase.body).toBe(200);
    const erased = erase.json() as PrivacyErasure;
    const requestsBefore = gateway.requests + fallback.requests;
    fallback.refusing = undefined;
    gateway.refusing = undefined;
    expect(erased).toMatchObject({
      calls: 8,
      deliveries: 5,
      cancelled: 1,
      audit: 1,
      limitSlots: 0,
      rollups: 2,
    });
    expect(erased.attempts).toBeGreaterThanOrEqual(4);
    expect(erased.hash).toMatch(/^[0-9a-f]{64}$/);
    if (dialect === 'sqlite') expect(erased.disk).toEqual({ walTruncated: true, vacuumed: [] });
    else {
      expect(erased.disk.walTruncated).toBeNull();
      // Today's partitions and the legacy call's (the default one), and the audit.
      expect(erased.disk.vacuumed).toEqual(expect.arrayContaining(['audit']));
      expect(erased.disk.vacuumed.filter((name) => name.startsWith('calls')).length).toBeGreaterThanOrEqual(
        2,
      );
    }
    // Nothing more reached either gateway, though both take codes again.
    t.app.outbox.wake();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(gateway.requests + fallback.requests).toBe(requestsBefore);
    const cancelled = await json<DeliveryList>('/api/deliveries?status=expired');
    expect(cancelled.items).toHaveLength(1);
    expect(cancelled.items[0]).toMatchObject({ recipient: '[erased]' });
    expect(cancelled.items[0]?.lastError).toMatch(/^Cancelled: the phone number was erased/);
  });

  it('leaves no spelling of the number in any table, and [erased] in its place in History', async () => {
    const all = await everyText();
    for (const digits of DIGITS) expect(all).not.toContain(digits);
    expect(all).not.toMatch(ANY_SPELLING);
    // The other parent's call is as it was.
    const other = await json<CallDetail>(`/api/calls/${otherCall}`);
    expect(other.params).toMatchObject({ phone: OTHER });
    // History: the number is found nowhere, by the Phone filter or free text, and says erased.
    for (const url of [
      `/api/calls?phone=${encodeURIComponent(PHONE)}`,
      '/api/calls?q=7458913276',
      `/api/calls?q=${encodeURIComponent('"07458 913276"')}`,
      '/api/calls?q=913276',
      `/api/deliveries?recipient=${encodeURIComponent('07458 913276')}`,
    ]) {
      const list = await json<CallList | DeliveryList>(url);
      expect(list.items, url).toHaveLength(0);
    }
    const legacy = await json<CallDetail>(`/api/calls/${legacyCall}`);
    expect(legacy.params).toEqual({ code: '***', phone: '[erased]' });
    expect(legacy.error).toBe('Invalid phone: [erased] was refused.');
    // Where the note or the error alone held it, they alone changed.
    const inNote = await json<CallDetail>(`/api/calls/${noteCall}`);
    expect(inNote.note).toBe('Push queued; the office is to ring the parent on [erased] too.');
    expect(inNote.params).toMatchObject({ id: '5', TypeNotfication: 'trip' });
    const inError = await json<CallDetail>(`/api/calls/${errorCall}`);
    expect(inError.error).toBe('SMS gateway: [erased] is not +447911123456 (refused).');
    expect(inError.params).toMatchObject({ phone: '+447911123456' });
    const erasedCalls = await json<CallList>('/api/calls?q=%5Berased%5D&limit=50');
    expect(erasedCalls.items.length).toBe(8);
    // The report finds nothing now.
    const r = await report(PHONE);
    expect(r).toMatchObject({ calls: [], deliveries: [], audit: [], limitSlots: 0 });
  });

  it('keeps the counts and the Dashboard as they were', async () => {
    const after = await figures();
    expect(after.count).toEqual(before.count);
    const { stats: s0 } = before;
    const { stats: s1 } = after;
    expect(s1.rows).toEqual(s0.rows);
    expect(s1.latency).toEqual(s0.latency);
    expect(s1.statuses).toEqual(s0.statuses);
    // The same errors, counted the same; the legacy call's text now says erased.
    const erased = (text: string | null) => text?.replace('07458-913-276', '[erased]') ?? null;
    expect(s1.errors).toEqual(s0.errors.map((e) => ({ ...e, error: erased(e.error) })));
    expect(s0.errors.map((e) => e.error)).toContain('Invalid phone: 07458-913-276 was refused.');
    // The code on its way is expired now, not waiting: as many deliveries all the same.
    const total = (s: Stats) =>
      s.deliveries.reduce((n, d) => n + d.sent + d.logged + d.dead + d.expired + d.waiting, 0);
    expect(total(s1)).toBe(total(s0));
  });

  it('audits the erasure by the keyed hash, never the number', async () => {
    const [entry] = await t.app.store.db
      .selectFrom('audit')
      .selectAll()
      .where('action', '=', 'privacy-erase')
      .execute();
    expect(entry?.username).toBe(TEST_ADMIN.username);
    expect(JSON.stringify(entry)).not.toMatch(ANY_SPELLING);
    const details = JSON.parse(entry?.details ?? '{}');
    expect(details).toMatchObject({ calls: 8, deliveries: 5, cancelled: 1 });
    // The same number's hash each time (and the report's): the list of erasures can be checked.
    const reportHash = await t.app.store.db
      .selectFrom('audit')
      .select('details')
      .where('action', '=', 'privacy-report')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(reportHash.details ?? '{}').hash).toBe(details.hash);
  });

  it('waits for a code being sent, then erases it with the provider’s answer', async () => {
    // The fallback takes a second to answer: the code is with it when the erasure begins.
    fallback.delayMs = 1000;
    const res = await t.app.inject({
      method: 'GET',
      url: '/AuthCodeSending.asmx/AuthCode?code=9191&phone=07458913276',
    });
    expect(res.statusCode).toBe(200);
    await waitUntil(async () => {
      const row = await t.app.store.db
        .selectFrom('deliveries')
        .select(['status', 'provider'])
        .where('recipient', '=', PHONE)
        .executeTakeFirst();
      return row?.status === 'sending' && row.provider === 'http-fallback';
    });
    const started = Date.now();
    const erase = await t.inject({ method: 'POST', url: '/api/privacy/erase', payload: { phone: PHONE } });
    expect(erase.statusCode, erase.body).toBe(200);
    // It waited for the attempt under way, which sent the code (it was with the provider already).
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(erase.json()).toMatchObject({ calls: 1, deliveries: 1, cancelled: 0 });
    const sentTo = fallback.sent.map((m) => m.to);
    // The four codes of the start, and this one.
    expect(sentTo.filter((to) => to === PHONE)).toHaveLength(5);
    fallback.delayMs = 0;
    const all = await everyText();
    expect(all).not.toMatch(ANY_SPELLING);
    const [delivery] = (await json<DeliveryList>('/api/deliveries?status=sent&limit=1')).items;
    expect(delivery).toMatchObject({ recipient: '[erased]' });
  });
});
