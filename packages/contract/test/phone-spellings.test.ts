import { describe, expect, it } from 'vitest';
import { phoneSpellings } from '../src/index.js';

describe('phoneSpellings', () => {
  it('spells a GB mobile at home and abroad', () => {
    expect(phoneSpellings('+447458913276')).toEqual({
      e164: '+447458913276',
      countryCallingCode: '44',
      nationalNumber: '7458913276',
      nationalPrefix: '0',
      national: '07458 913276',
      international: '+44 7458 913276',
    });
  });

  it('has no national prefix where the country dials none', () => {
    const us = phoneSpellings('+12025550123');
    expect(us?.nationalPrefix).toBe('');
    expect(us?.nationalNumber).toBe('2025550123');
    expect(phoneSpellings('+33612345678')?.nationalPrefix).toBe('0');
  });

  it('answers nothing for what is no valid number', () => {
    expect(phoneSpellings('+4412')).toBeUndefined();
    expect(phoneSpellings('hello')).toBeUndefined();
  });
});
