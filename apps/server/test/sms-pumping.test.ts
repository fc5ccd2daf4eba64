/**
 * SMS pumping (docs/security.md#sms-pumping): the open AuthCode endpoint sends codes only to
 * mobiles (and numbers that may be mobiles) of the countries allowed, never to any other kind of
 * number, and not to a range of numbers walked one after another. Each refusal answers as ASMX
 * answers bad input, by every door, is recorded in History, counted in a metric, and queues
 * nothing. A real HTTP gateway would have received any SMS.
 */
import { Writable } from 'node:stream';
import type { NumberType } from '@school/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { kindRefusal } from '../src/limits/sms-destinations.js';
import {
  AUTHCODE_DOORS,
  authCodeByEveryDoor,
  refusedByEveryDoor,
  TAKEN_BY_EVERY_DOOR,
} from './authcode-doors.js';
import { startTestApp, type TestApp } from './helpers.js';
import { gatewayEnv, type SmsGateway, startSmsGateway } from './sms-gateway.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function app(
  env: Record<string, string> = {},
  logger?: Writable,
): Promise<{ t: TestApp; gateway: SmsGateway }> {
  const gateway = await startSmsGateway();
  cleanups.push(() => gateway.close());
  const t = await startTestApp(
    { ...gatewayEnv(gateway), ...env },
    undefined,
    logger ? { level: 'warn', stream: logger } : undefined,
  );
  cleanups.push(() => t.close());
  return { t, gateway };
}

const authCode = (t: TestApp, phone: string) =>
  t.app.inject({
    method: 'POST',
    url: '/AuthCodeSending.asmx',
    headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
    payload:
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>' +
      `<AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>${phone}</phone></AuthCode></soap:Body></soap:Envelope>`,
  });

const getCode = (t: TestApp, phone: string) =>
  t.app.inject({
    method: 'GET',
    url: `/AuthCodeSending.asmx/AuthCode?code=4821&phone=${encodeURIComponent(phone)}`,
  });

/** The fault string of a SOAP 1.1 fault answer. */
const faultOf = (body: string) => /<faultstring>([^<]*)<\/faultstring>/.exec(body)?.[1];

const refusedMetric = async (t: TestApp, reason: string): Promise<number> => {
  const text = await t.app.metrics.scrape();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`school_authcode_refused_total{reason="${reason}"}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
};

describe('AuthCode and SMS pumping', () => {
  it('never sends a code to premium-rate, toll-free or international-network numbers, in any configuration', async () => {
    const { t, gateway } = await app();
    for (const [phone, words] of [
      ['+449098790000', 'premium-rate numbers'],
      ['+448001234567', 'toll-free numbers'],
      ['+443001234567', 'universal access numbers'],
      ['+447623123456', 'pagers'],
      ['+88216123456', 'international network or satellite numbers'],
    ] as const) {
      const res = await authCode(t, phone);
      // As the service answers bad input (an unknown school alike): a fault naming the problem.
      expect(res.statusCode, phone).toBe(500);
      expect(faultOf(res.body)).toBe(`Invalid phone: codes are not sent to ${words}.`);
    }
    // HTTP GET answers a refusal 400, in plain text (docs/faults.md).
    const get = await getCode(t, '+449098790000');
    expect(get.statusCode).toBe(400);
    expect(get.body).toContain('Invalid phone: codes are not sent to premium-rate numbers.');

    // Recorded, refused, nothing queued or sent.
    const calls = (await t.inject({ method: 'GET', url: '/api/calls?operation=AuthCode' })).json();
    expect(calls.items).toHaveLength(6);
    for (const call of calls.items) {
      expect(call.outcome).toBe('client-error');
      expect(call.delivery).toBeNull();
    }
    expect((await t.app.deliveryRollups.stateCounts()).pending).toBe(0);
    expect(await refusedMetric(t, 'number-type')).toBe(6);
    await t.app.outbox.idle();
    expect(gateway.requests).toBe(0);
  });

  it('sends to every country by default, saying at start that it does', async () => {
    let log = '';
    const stream = new Writable({
      write(chunk, _enc, done) {
        log += chunk.toString();
        done();
      },
    });
    const { t, gateway } = await app({}, stream);
    expect(log).toMatch(/AuthCode sends SMS to every country: set SMS_ALLOWED_COUNTRIES/);
    // A Nigerian mobile: allowed, as nothing limits the countries.
    expect((await authCode(t, '+2348031234567')).statusCode).toBe(200);
    await t.app.outbox.idle();
    expect(gateway.sent.map((m) => m.to)).toEqual(['+2348031234567']);
  });

  it('sends only to SMS_ALLOWED_COUNTRIES, and to landlines only with SMS_ALLOW_FIXED_LINE', async () => {
    const { t, gateway } = await app({ SMS_ALLOWED_COUNTRIES: 'GB, GG' });
    const nigeria = await authCode(t, '+2348031234567');
    expect(nigeria.statusCode).toBe(500);
    expect(faultOf(nigeria.body)).toBe('Invalid phone: codes are not sent to numbers of Nigeria (NG).');
    const landline = await getCode(t, '+442071234567');
    expect(landline.statusCode).toBe(400);
    expect(landline.body).toContain(
      'Invalid phone: codes are sent to mobile numbers only, and this is a landline.',
    );
    expect((await authCode(t, '+447911123456')).statusCode).toBe(200); // Guernsey, allowed
    expect((await authCode(t, '+447400123456')).statusCode).toBe(200); // GB mobile
    await t.app.outbox.idle();
    expect(gateway.sent.map((m) => m.to).sort()).toEqual(['+447400123456', '+447911123456']);
    expect(await refusedMetric(t, 'country')).toBe(1);
    expect(await refusedMetric(t, 'number-type')).toBe(1);

    const service = (await t.inject({ method: 'GET', url: '/api/service' })).json();
    expect(service.smsDestinations).toEqual({ allowedCountries: ['GB', 'GG'], fixedLines: false });

    const { t: withLandlines } = await app({ SMS_ALLOWED_COUNTRIES: 'GB', SMS_ALLOW_FIXED_LINE: 'on' });
    expect((await getCode(withLandlines, '+442071234567')).statusCode).toBe(200);
  });

  it("allows DEFAULT_PHONE_REGION's country alone when no list is given, naming a refused one", async () => {
    const { t } = await app({ DEFAULT_PHONE_REGION: 'GB' });
    expect((await getCode(t, '07400 123456')).statusCode).toBe(200);
    const guernsey = await getCode(t, '+447911123456');
    expect(guernsey.statusCode).toBe(400);
    expect(guernsey.body).toContain('Invalid phone: codes are not sent to numbers of Guernsey (GG).');
    const service = (await t.inject({ method: 'GET', url: '/api/service' })).json();
    expect(service.smsDestinations.allowedCountries).toEqual(['GB']);
  });

  it('refuses the eleventh code within an hour to one range of 1 000 numbers, as pumping walks them', async () => {
    const { t, gateway } = await app({ AUTHCODE_LIMIT_PER_RANGE: '10/1h' });
    for (let i = 0; i < 10; i++) {
      expect((await authCode(t, `+447400123${String(i).padStart(3, '0')}`)).statusCode).toBe(200);
    }
    const eleventh = await getCode(t, '+447400123999');
    expect(eleventh.statusCode).toBe(429);
    expect(eleventh.body).toMatch(/^Too many codes for the numbers \+447400123xxx: at most 10 per hour\./);
    // Another range is not held up.
    expect((await authCode(t, '+447400124000')).statusCode).toBe(200);
    expect(await refusedMetric(t, 'range')).toBe(1);
    await t.app.outbox.idle();
    expect(gateway.sent).toHaveLength(11);
  });
});

/** The AuthCode calls History holds for `phone`, by door: their outcome, error and delivery. */
async function historyOf(t: TestApp, phone: string) {
  const calls = (await t.inject({ method: 'GET', url: '/api/calls?operation=AuthCode&limit=200' })).json();
  return (calls.items as { binding: string; params: { phone?: string } | null }[])
    .filter((c) => c.params?.phone === phone)
    .map(({ binding, outcome, error, delivery }: Record<string, unknown>) => ({
      binding,
      outcome,
      error,
      queued: delivery !== null,
    }))
    .sort((a, b) => String(a.binding).localeCompare(String(b.binding)));
}

/** What History holds for a phone refused by every door. */
const refusedInHistory = (error: string) =>
  [...AUTHCODE_DOORS].sort().map((binding) => ({ binding, outcome: 'client-error', error, queued: false }));

/** What History holds for a phone whose code every door took. */
const takenInHistory = () =>
  [...AUTHCODE_DOORS].sort().map((binding) => ({ binding, outcome: 'ok', error: null, queued: true }));

describe('AuthCode sends only to the kinds of number allowed, by every door', () => {
  it('refuses UK personal (070) and VoIP (056) numbers in the region of DEFAULT_PHONE_REGION, and sends to its mobiles', async () => {
    const { t, gateway } = await app({ DEFAULT_PHONE_REGION: 'GB' });
    for (const [phone, words] of [
      ['+447011234567', 'personal numbers'],
      ['+445612345678', 'VoIP numbers'],
    ] as const) {
      const text = `Invalid phone: codes are not sent to ${words}.`;
      expect(await authCodeByEveryDoor(t, phone), phone).toEqual(refusedByEveryDoor(text));
      expect(await historyOf(t, phone), phone).toEqual(refusedInHistory(text));
    }
    expect(await authCodeByEveryDoor(t, '+447400123456')).toEqual(TAKEN_BY_EVERY_DOOR);
    expect(await historyOf(t, '+447400123456')).toEqual(takenInHistory());

    expect(await refusedMetric(t, 'number-type')).toBe(10);
    await t.app.outbox.idle();
    expect(gateway.sent.map((m) => m.to)).toEqual(Array(5).fill('+447400123456'));
  });

  it('refuses US personal numbers (500, 533) and sends to the numbers North America cannot tell from landlines', async () => {
    const { t, gateway } = await app({ SMS_ALLOWED_COUNTRIES: 'US' });
    for (const phone of ['+15002345678', '+15332345678']) {
      const text = 'Invalid phone: codes are not sent to personal numbers.';
      expect(await authCodeByEveryDoor(t, phone), phone).toEqual(refusedByEveryDoor(text));
      expect(await historyOf(t, phone), phone).toEqual(refusedInHistory(text));
    }
    // 201 is New Jersey: a landline or a mobile, the numbering plan does not say which.
    expect(await authCodeByEveryDoor(t, '+12015550123')).toEqual(TAKEN_BY_EVERY_DOOR);
    expect(await historyOf(t, '+12015550123')).toEqual(takenInHistory());

    expect(await refusedMetric(t, 'number-type')).toBe(10);
    await t.app.outbox.idle();
    expect(gateway.sent.map((m) => m.to)).toEqual(Array(5).fill('+12015550123'));
  });

  it('refuses landlines unless SMS_ALLOW_FIXED_LINE=on, which opens no other kind', async () => {
    const landline = '+442071234567';
    const mobilesOnly = await app({ SMS_ALLOWED_COUNTRIES: 'GB' });
    const text = 'Invalid phone: codes are sent to mobile numbers only, and this is a landline.';
    expect(await authCodeByEveryDoor(mobilesOnly.t, landline)).toEqual(refusedByEveryDoor(text));
    expect(await historyOf(mobilesOnly.t, landline)).toEqual(refusedInHistory(text));
    expect(await refusedMetric(mobilesOnly.t, 'number-type')).toBe(5);

    const withLandlines = await app({ SMS_ALLOWED_COUNTRIES: 'GB', SMS_ALLOW_FIXED_LINE: 'on' });
    expect(await authCodeByEveryDoor(withLandlines.t, landline)).toEqual(TAKEN_BY_EVERY_DOOR);
    for (const [phone, words] of [
      ['+447011234567', 'personal numbers'],
      ['+445612345678', 'VoIP numbers'],
    ] as const) {
      expect(await authCodeByEveryDoor(withLandlines.t, phone), phone).toEqual(
        refusedByEveryDoor(`Invalid phone: codes are not sent to ${words}.`),
      );
    }

    await mobilesOnly.t.app.outbox.idle();
    await withLandlines.t.app.outbox.idle();
    expect(mobilesOnly.gateway.sent).toEqual([]);
    expect(withLandlines.gateway.sent.map((m) => m.to)).toEqual(Array(5).fill(landline));
  });

  it('refuses every other kind of number by every door, to every country and with landlines on', async () => {
    const { t, gateway } = await app({ SMS_ALLOW_FIXED_LINE: 'on' });
    const kinds = [
      ['+449098790000', 'premium-rate numbers'],
      ['+33810234567', 'shared-cost numbers'],
      ['+448001234567', 'toll-free numbers'],
      ['+443001234567', 'universal access numbers'],
      ['+4781234567', 'voicemail numbers'],
      ['+447623123456', 'pagers'],
      ['+447011234567', 'personal numbers'],
      ['+445612345678', 'VoIP numbers'],
      ['+88216123456', 'international network or satellite numbers'],
    ] as const;
    for (const [phone, words] of kinds) {
      expect(await authCodeByEveryDoor(t, phone), phone).toEqual(
        refusedByEveryDoor(`Invalid phone: codes are not sent to ${words}.`),
      );
    }
    expect(await refusedMetric(t, 'number-type')).toBe(kinds.length * AUTHCODE_DOORS.length);
    expect((await t.app.deliveryRollups.stateCounts()).pending).toBe(0);
    await t.app.outbox.idle();
    expect(gateway.requests).toBe(0);
  });

  it('allows mobiles, numbers that may be mobiles and, when asked, landlines; refuses any other kind, one it has no words for included', () => {
    // Every kind libphonenumber-js knows today (its PhoneNumberType), unknown, and one it may add.
    const kinds: NumberType[] = [
      'MOBILE',
      'FIXED_LINE_OR_MOBILE',
      'FIXED_LINE',
      'PREMIUM_RATE',
      'TOLL_FREE',
      'SHARED_COST',
      'VOIP',
      'PERSONAL_NUMBER',
      'PAGER',
      'UAN',
      'VOICEMAIL',
      undefined,
      'SATELLITE' as NumberType,
    ];
    const allowed = (allowFixedLine: boolean) =>
      kinds.filter((kind) => kindRefusal(kind, allowFixedLine) === undefined);
    expect(allowed(false)).toEqual(['MOBILE', 'FIXED_LINE_OR_MOBILE']);
    expect(allowed(true)).toEqual(['MOBILE', 'FIXED_LINE_OR_MOBILE', 'FIXED_LINE']);
    expect(kindRefusal(undefined, true)).toBe('codes are not sent to numbers of unknown kind.');
    expect(kindRefusal('SATELLITE' as NumberType, true)).toBe(
      'codes are not sent to numbers of this kind (SATELLITE).',
    );
  });
});
