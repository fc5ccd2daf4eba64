import { getCountries } from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import {
  checkParam,
  EXAMPLE_PHONE,
  examplePhone,
  operationByName,
  phoneKind,
  regionsSharingCallingCode,
} from '../src/index.js';

const phoneParam = () => {
  const param = operationByName('AuthCode')?.params.find((p) => p.name === 'phone');
  if (!param) throw new Error('AuthCode has no phone');
  return param;
};

describe('the example phone', () => {
  it('is a mobile of GB, not of Guernsey, and is what the operation table shows', () => {
    expect(phoneKind(EXAMPLE_PHONE)).toEqual({ country: 'GB', type: 'MOBILE' });
    expect(phoneParam().example).toBe(EXAMPLE_PHONE);
    expect(examplePhone()).toBe(EXAMPLE_PHONE);
    expect(examplePhone(null)).toBe(EXAMPLE_PHONE);
  });

  it("of a region is libphonenumber's mobile of that very region, or none at all", () => {
    expect(examplePhone('GB')).toBe('+447400123456');
    expect(examplePhone('FR')).toBe('+33612345678');
    expect(examplePhone('US')).toBe('+12015550123');
    expect(examplePhone('XX')).toBeUndefined();
    let without = 0;
    for (const region of getCountries()) {
      const example = examplePhone(region);
      if (example === undefined) {
        without++;
        continue;
      }
      const { country, type } = phoneKind(example);
      expect(country, region).toBe(region);
      expect(['MOBILE', 'FIXED_LINE_OR_MOBILE'], region).toContain(type);
    }
    // The few territories whose example libphonenumber reads as their neighbour's (IM as GB, …).
    expect(without).toBeLessThan(12);
    expect(examplePhone('IM')).toBeUndefined();
  });

  it("is the one error messages give: the region's when one is configured, else GB's", () => {
    const wire = (region?: 'FR' | 'IM') =>
      checkParam(phoneParam(), '12345', region ? { defaultPhoneRegion: region } : {});
    expect(wire()).toMatchObject({ message: expect.stringMatching(/, e\.g\. \+447400123456\.$/) });
    expect(wire('FR')).toMatchObject({ message: expect.stringMatching(/, e\.g\. \+33612345678\.$/) });
    expect(wire('IM')).toMatchObject({
      message:
        "Invalid phone: '12345' is not a valid phone number. Send it in international format, with + and the country code.",
    });
    expect(checkParam(phoneParam(), '12345', { defaultPhoneRegion: 'FR', wording: 'staff' })).toEqual({
      ok: false,
      message:
        "'12345' is not a valid phone number. Write it with + and the country code, e.g. +33612345678.",
    });
  });
});

describe('regions sharing a calling code', () => {
  it('names the territories whose numbers start as the region’s do', () => {
    expect(regionsSharingCallingCode('GB')).toEqual({ callingCode: '44', regions: ['GG', 'IM', 'JE'] });
    const us = regionsSharingCallingCode('US');
    expect(us.callingCode).toBe('1');
    expect(us.regions).toContain('CA');
    expect(us.regions).toContain('JM');
    expect(us.regions).not.toContain('US');
    expect(regionsSharingCallingCode('FR')).toEqual({ callingCode: '33', regions: [] });
    expect(regionsSharingCallingCode('XX')).toEqual({ callingCode: '', regions: [] });
  });
});
