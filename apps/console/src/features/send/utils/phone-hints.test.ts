import { EXAMPLE_PHONE } from '@school/contract';
import { describe, expect, it } from 'vitest';
import { phoneExampleFor, sharedCallingCodeNote } from './phone-hints';

describe('the Send form’s example phone', () => {
  it('is a mobile of a country codes go to', () => {
    expect(phoneExampleFor(undefined, undefined)).toBe(EXAMPLE_PHONE); // not known yet
    expect(phoneExampleFor(undefined, null)).toBe(EXAMPLE_PHONE); // every country
    expect(phoneExampleFor('FR', null)).toBe('+33612345678');
    expect(phoneExampleFor('GB', ['GB', 'GG'])).toBe('+447400123456');
    // No region, or one codes do not go to: the first country they go to.
    expect(phoneExampleFor(undefined, ['IE'])).toBe('+353850123456');
    expect(phoneExampleFor('GB', ['FR', 'DE'])).toBe('+33612345678');
    // A territory whose example libphonenumber reads as its neighbour's: none rather than a refused one.
    expect(phoneExampleFor('IM', ['IM'])).toBeUndefined();
  });
});

describe('the note on a shared calling code', () => {
  it('names the territories codes do not go to, or counts them when there are many', () => {
    expect(sharedCallingCodeNote('GB', ['GB'])).toBe(
      'Numbers of Guernsey, the Isle of Man and Jersey share +44: codes go to them only if SMS_ALLOWED_COUNTRIES lists them.',
    );
    expect(sharedCallingCodeNote('JE', ['JE'])).toBe(
      'Numbers of Guernsey, the Isle of Man and the United Kingdom share +44: codes go to them only if SMS_ALLOWED_COUNTRIES lists them.',
    );
    expect(sharedCallingCodeNote('US', ['US', 'CA'])).toBe(
      'Numbers of 23 other countries and territories share +1: codes go to them only if SMS_ALLOWED_COUNTRIES lists them.',
    );
    expect(sharedCallingCodeNote('GB', ['GB', 'GG', 'IM', 'JE'])).toBeUndefined();
    expect(sharedCallingCodeNote('GB', null)).toBeUndefined(); // codes go to every country
    expect(sharedCallingCodeNote('FR', ['FR'])).toBeUndefined(); // +33 is France's alone
  });
});
