import { describe, expect, it } from 'vitest';
import {
  checkParam,
  groups,
  maskParams,
  operationByName,
  operations,
  phoneKind,
  TEMPLATE_PLACEHOLDERS,
  templateTypeKey,
  unknownPlaceholders,
  unknownPlaceholdersMessage,
  validateParams,
} from '../src/index.js';

const op = (name: string) => {
  const found = operationByName(name);
  if (!found) throw new Error(name);
  return found;
};
const reader = (values: Record<string, string>) => (name: string) => values[name];

describe('operation table', () => {
  it('lists the four groups and five operations of the interface, parameters in wire order', () => {
    expect(groups.map((g) => g.path)).toEqual([
      '/AuthCodeSending.asmx',
      '/BookPdf.asmx',
      '/NotificationNotes.asmx',
      '/PushNotificationMobile.asmx',
    ]);
    expect(operations.map((o) => [o.name, o.params.map((p) => p.name)])).toEqual([
      ['AuthCode', ['code', 'phone']],
      ['GetBookPdfByTerm', ['termId', 'srid', 'classId']],
      ['SendNotificationType', ['id', 'baseUrlSchool', 'TypeNotfication']],
      ['SendMarkNotes', ['id', 'id_class', 'baseUrlSchool']],
      ['pushNoti', []],
    ]);
  });
});

describe('validateParams', () => {
  it('normalises a valid phone to E.164 and keeps the code', () => {
    const result = validateParams(op('AuthCode'), reader({ code: 'a1B2', phone: '+44 7911 123456' }));
    expect(result).toEqual({ ok: true, values: { code: 'a1B2', phone: '+447911123456' } });
  });

  it('reads national numbers with the default region, and refuses them without one', () => {
    const read = reader({ code: '1234', phone: '06 12 34 56 78' });
    expect(validateParams(op('AuthCode'), read, { defaultPhoneRegion: 'FR' })).toMatchObject({
      ok: true,
      values: { phone: '+33612345678' },
    });
    const refused = validateParams(op('AuthCode'), read);
    expect(refused.ok).toBe(false);
    if (!refused.ok)
      expect(refused.error.message).toMatch(/^Invalid phone: '06 12 34 56 78' is not a valid phone/);
  });

  it('names the first missing parameter', () => {
    const result = validateParams(op('AuthCode'), reader({ code: '1234' }));
    expect(result).toEqual({
      ok: false,
      error: { param: 'phone', reason: 'missing', message: 'Missing parameter: phone.' },
    });
  });

  it.each(['', '12345678901234567', '12 34', 'código', '<b>'])('refuses the code %j', (code) => {
    const result = validateParams(op('AuthCode'), reader({ code, phone: '+447911123456' }));
    expect(result).toMatchObject({ ok: false, error: { param: 'code', reason: 'invalid' } });
    // The code itself is a secret: never echoed.
    if (!result.ok && code) expect(result.error.message).not.toContain(code);
  });

  it.each(['', 'abc', '+1', '+44791112345678901', '1'.repeat(100)])('refuses the phone %j', (phone) => {
    expect(validateParams(op('AuthCode'), reader({ code: '1', phone }))).toMatchObject({
      ok: false,
      error: { param: 'phone', reason: 'invalid' },
    });
  });

  it('takes an empty string as a value and bounds text length', () => {
    const read = reader({ termId: '', srid: '', classId: '' });
    expect(validateParams(op('GetBookPdfByTerm'), read)).toEqual({
      ok: true,
      values: { termId: '', srid: '', classId: '' },
    });
    const long = validateParams(
      op('GetBookPdfByTerm'),
      reader({ termId: 'x'.repeat(1025), srid: '', classId: '' }),
    );
    expect(long).toMatchObject({
      ok: false,
      error: { param: 'termId', message: 'Invalid termId: longer than 1024 characters.' },
    });
  });

  it('accepts pushNoti with nothing', () => {
    expect(validateParams(op('pushNoti'), () => undefined)).toEqual({ ok: true, values: {} });
  });
});

describe('the Send form’s wording (staff)', () => {
  const param = (opName: string, name: string) => {
    const found = op(opName).params.find((p) => p.name === name);
    if (!found) throw new Error(name);
    return found;
  };
  const staff = { wording: 'staff' } as const;

  it('asks for what is missing and names no parameter', () => {
    expect(checkParam(param('AuthCode', 'phone'), '', staff)).toEqual({
      ok: false,
      message: 'Enter a phone number.',
    });
    expect(checkParam(param('AuthCode', 'phone'), '12345', staff)).toEqual({
      ok: false,
      message:
        "'12345' is not a valid phone number. Write it with + and the country code, e.g. +447400123456.",
    });
    expect(checkParam(param('AuthCode', 'code'), '', staff)).toEqual({
      ok: false,
      message: 'Enter the code.',
    });
    expect(checkParam(param('AuthCode', 'code'), 'ab cd', staff)).toEqual({
      ok: false,
      message: 'A code is 1 to 16 letters or digits, nothing else.',
    });
    expect(checkParam(param('GetBookPdfByTerm', 'termId'), 'x'.repeat(1025), staff)).toEqual({
      ok: false,
      message: 'Too long: at most 1024 characters.',
    });
  });

  it('leaves the wire’s wording as the faults carry it', () => {
    expect(checkParam(param('AuthCode', 'phone'), '')).toEqual({
      ok: false,
      message:
        "Invalid phone: '' is not a valid phone number. Send it in international format, with + and the country code, e.g. +447400123456.",
    });
  });
});

describe('templates', () => {
  it('match a type by its key: trimmed, lower case', () => {
    expect(['Homework', 'HOMEWORK', ' homework ', 'homework'].map(templateTypeKey)).toEqual([
      'homework',
      'homework',
      'homework',
      'homework',
    ]);
  });

  it('find the placeholders the server does not fill, and say which ones it does', () => {
    expect(unknownPlaceholders('{type} {id} {id_class} {baseUrlSchool} {school} { x } {} {a-b}')).toEqual([]);
    expect(unknownPlaceholders('{class} at {School}, {class} again')).toEqual(['{class}', '{School}']);
    expect(unknownPlaceholdersMessage(['{class}', '{School}'])).toBe(
      `Unknown placeholders {class} and {School}: it would be sent as written. Use ${TEMPLATE_PLACEHOLDERS.slice(0, -1).join(', ')} and {school}. ({School} is written {school}.)`,
    );
  });
});

describe('maskParams', () => {
  it('masks the auth code and nothing else', () => {
    expect(maskParams(op('AuthCode'), { code: '4821', phone: '+447911123456' })).toEqual({
      code: '***',
      phone: '+447911123456',
    });
  });
});

describe('phoneKind', () => {
  it('says the country and kind of a number, whether or not it was just validated', () => {
    const auth = operations.find((o) => o.name === 'AuthCode');
    const phone = auth?.params.find((p) => p.name === 'phone');
    if (!phone) throw new Error('no phone parameter');
    expect(checkParam(phone, '+44 909 879 0000')).toEqual({ ok: true, value: '+449098790000' });
    expect(phoneKind('+449098790000')).toEqual({ country: 'GB', type: 'PREMIUM_RATE' });
    // Read again, or never validated: parsed then, with the same answer.
    expect(phoneKind('+449098790000')).toEqual({ country: 'GB', type: 'PREMIUM_RATE' });
    expect(phoneKind('+2348031234567')).toEqual({ country: 'NG', type: 'MOBILE' });
    expect(phoneKind('+88216123456').country).toBeUndefined();
  });
});
