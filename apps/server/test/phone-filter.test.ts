/**
 * History's phone filter: the AuthCode calls for one number, however the caller wrote it and
 * however staff type it (international, or national in DEFAULT_PHONE_REGION), in the list, the
 * count and the export alike; a text that is no phone number is refused in the API's terms.
 */
import type { CallList } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

describe.each(DIALECTS)('the phone filter in History (%s)', (dialect) => {
  let t: TestApp;
  const ids: Record<string, number> = {};

  const authCode = async (phone: string) => {
    const res = await t.inject({
      method: 'GET',
      url: `/AuthCodeSending.asmx/AuthCode?code=4821&phone=${encodeURIComponent(phone)}`,
    });
    const [call] = await t.app.history.list({ limit: 1 });
    return { status: res.statusCode, id: call?.id as number };
  };
  const list = async (phone: string) => {
    const res = await t.inject({ method: 'GET', url: `/api/calls?phone=${encodeURIComponent(phone)}` });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as CallList).items.map((c) => c.id);
  };

  beforeAll(async () => {
    // +44 7911 numbers are Guernsey's.
    t = await startTestAppOn(dialect, { DEFAULT_PHONE_REGION: 'GB', SMS_ALLOWED_COUNTRIES: 'GB,GG' });
    for (const [name, phone] of [
      ['international', '+447911123456'],
      ['national', '07911 123456'],
      ['other', '+447911123457'],
    ] as const) {
      const sent = await authCode(phone);
      expect(sent.status).toBe(200);
      ids[name] = sent.id;
    }
    const refused = await authCode('not a phone');
    expect(refused.status).toBe(400);
    ids.refused = refused.id;
  });
  afterAll(() => t?.close());

  it('finds the calls for a number, newest first, whichever way it was written', async () => {
    const both = [ids.national, ids.international];
    expect(await list('+447911123456')).toEqual(both);
    expect(await list('07911 123456')).toEqual(both);
    expect(await list('+44 (0)7911-123456')).toEqual(both);
    expect(await list('+447911123457')).toEqual([ids.other]);
    expect(await list('+33612345678')).toEqual([]);
  });

  it('counts and exports what it lists', async () => {
    const count = await t.inject({ method: 'GET', url: '/api/calls/count?phone=07911123456' });
    expect(count.json()).toEqual({ count: 2, more: false });
    const csv = await t.inject({ method: 'GET', url: '/api/calls/export?format=csv&phone=07911123456' });
    expect(csv.statusCode).toBe(200);
    expect(csv.body.trim().split('\n')).toHaveLength(3);
  });

  it('refuses a text that is no phone number, saying so about the phone', async () => {
    const res = await t.inject({ method: 'GET', url: '/api/calls?phone=hello' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({
      status: 400,
      errors: { phone: expect.stringContaining('not a valid phone number') },
    });
    // The call with a phone that was refused is found by free text, not by the filter.
    const text = await t.inject({ method: 'GET', url: '/api/calls?q=not%20a%20phone' });
    expect((text.json() as CallList).items.map((c) => c.id)).toContain(ids.refused);
  });
});
