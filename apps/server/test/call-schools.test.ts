import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastCall, registerSchool, type TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

/**
 * Which school a call belongs to (operations/call-school.ts, docs/security.md#who-sees-what),
 * decided as it is recorded, with its deliveries following it.
 */

const NS = 'http://tempuri.org/';

const soap11 = (op: string, inner: string) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><${op} xmlns="${NS}">${inner}</${op}></soap:Body></soap:Envelope>`;

/** The school and the deliveries' schools of the newest call. */
async function newest(app: FastifyInstance) {
  const call = await lastCall(app);
  const deliveries = await app.outbox.deliveries.search({ callId: call.id }, { limit: 10 });
  return { school: call.school_id, deliveries: deliveries.map((d) => d.school_id) };
}

describe.each(DIALECTS)('the school of a call (%s)', (dialect) => {
  let t: TestApp;
  let north: number;
  let south: number;

  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    north = (
      await registerSchool(t.app, {
        name: 'North',
        baseUrl: 'https://north.example.org',
        topicKey: 'north',
        allowedIps: '203.0.113.0/24,192.0.2.50',
      })
    ).id;
    south = (
      await registerSchool(t.app, {
        name: 'South',
        baseUrl: 'https://south.example.org',
        topicKey: 'south',
        allowedIps: '198.51.100.7,192.0.2.50',
      })
    ).id;
    await registerSchool(t.app, { name: 'Open', baseUrl: 'https://open.example.org', topicKey: 'open' });
  });
  afterAll(() => t.close());

  const soap = (op: string, inner: string, remoteAddress: string) =>
    t.app.inject({
      method: 'POST',
      url: op === 'AuthCode' ? '/AuthCodeSending.asmx' : '/NotificationNotes.asmx',
      remoteAddress,
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}${op}"` },
      payload: soap11(op, inner),
    });

  it('is the school its baseUrlSchool names, and its push is that school’s too', async () => {
    const res = await soap(
      'SendNotificationType',
      '<id>1</id><baseUrlSchool>HTTPS://north.example.org/</baseUrlSchool><TypeNotfication>news</TypeNotfication>',
      '203.0.113.4',
    );
    expect(res.statusCode).toBe(200);
    expect(await newest(t.app)).toEqual({ school: north, deliveries: [north] });
  });

  it('is the named school even when that school refuses the caller’s address', async () => {
    const res = await soap(
      'SendMarkNotes',
      '<id>1</id><id_class>7</id_class><baseUrlSchool>https://south.example.org</baseUrlSchool>',
      '203.0.113.4',
    );
    expect(res.statusCode).toBe(500);
    expect(await newest(t.app)).toEqual({ school: south, deliveries: [] });
  });

  it('is none when the named school is not registered', async () => {
    await soap(
      'SendNotificationType',
      '<id>1</id><baseUrlSchool>https://nowhere.example.org</baseUrlSchool><TypeNotfication>news</TypeNotfication>',
      '203.0.113.4',
    );
    expect((await newest(t.app)).school).toBeNull();
  });

  it('is, for an AuthCode, the one school whose allowed addresses hold the caller', async () => {
    const res = await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '203.0.113.99');
    expect(res.statusCode).toBe(200);
    expect(await newest(t.app)).toEqual({ school: north, deliveries: [north] });
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '198.51.100.7');
    expect(await newest(t.app)).toEqual({ school: south, deliveries: [south] });
  });

  it('is none when several schools hold the address, or none does', async () => {
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '192.0.2.50');
    expect(await newest(t.app)).toEqual({ school: null, deliveries: [null] });
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '198.51.100.8');
    expect(await newest(t.app)).toEqual({ school: null, deliveries: [null] });
  });

  it('is the caller’s school for a refused AuthCode, a book lookup and pushNoti', async () => {
    // A parameter left out (refused before the operation ran) and a book that does not exist.
    expect(
      (
        await t.app.inject({
          method: 'GET',
          url: '/AuthCodeSending.asmx/AuthCode?code=1',
          remoteAddress: '203.0.113.5',
        })
      ).statusCode,
    ).toBe(500);
    expect((await newest(t.app)).school).toBe(north);
    const book = await t.app.inject({
      method: 'GET',
      url: '/BookPdf.asmx/GetBookPdfByTerm?termId=1&srid=2&classId=3',
      remoteAddress: '198.51.100.7',
    });
    expect(book.statusCode).toBe(404);
    expect((await newest(t.app)).school).toBe(south);
    await t.app.inject({
      method: 'GET',
      url: '/PushNotificationMobile.asmx/pushNoti',
      remoteAddress: '203.0.113.5',
    });
    expect((await newest(t.app)).school).toBe(north);
  });

  it('follows a school registered, changed or removed at once', async () => {
    const school = await registerSchool(t.app, {
      name: 'West',
      baseUrl: 'https://west.example.org',
      topicKey: 'west',
      allowedIps: '100.64.0.1',
    });
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '100.64.0.1');
    expect((await newest(t.app)).school).toBe(school.id);
    await t.app.store.schools.update(school.id, { allowed_ips: '100.64.0.2' });
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '100.64.0.1');
    expect((await newest(t.app)).school).toBeNull();
    await t.app.store.schools.remove(school.id);
    await soap('AuthCode', '<code>123456</code><phone>+447911123456</phone>', '100.64.0.2');
    expect((await newest(t.app)).school).toBeNull();
  });
});
