import { ERASED, phoneSpellings, type ValidateOptions } from '@school/contract';
import { readPhone } from '../history/typed-phone.js';

type Region = ValidateOptions['defaultPhoneRegion'];

/**
 * One phone number as the privacy report and the erasure look for it: read as the operations read
 * it (libphonenumber, DEFAULT_PHONE_REGION for national numbers), then found in any text however it
 * was written there — `+44 7458 913276`, `07458913276`, `0044 7458-913276`, `%2B447458913276` in a
 * URL, `07458+913276` in a form.
 */
export interface PhoneForms {
  /** The number, E.164: what the calls' phone column and an SMS's recipient hold. */
  readonly e164: string;
  /** The spellings shown in the report: E.164, international, national, their digits. */
  readonly forms: readonly string[];
  /**
   * A LIKE pattern every spelling matches: the national number's digits in order, anything between
   * them (`%7%4%5%8%9%1%3%2%7%6%`). What History's free-text search looks for (one scan); a hit is a
   * candidate only, `holds` decides. Both databases stop such a LIKE at the first digit it cannot
   * find, so it costs what a substring's does.
   */
  readonly pattern: string;
  /** The national number's digits: what names the search. */
  readonly digits: string;
  /** Whether `text` holds the number in any spelling (its digits, not inside a longer number). */
  holds(text: string | null | undefined): boolean;
  /** `text` with each spelling of the number replaced by ERASED (`[erased]`). */
  scrub(text: string): string;
  /** As `scrub`, null kept. */
  scrubNullable(text: string | null): string | null;
}

/**
 * What may stand between the digits of a number as people and programs write it: spaces, dots,
 * dashes, slashes, brackets, a form's `+` for a space, and the same URL-encoded.
 */
const SEPARATOR = String.raw`(?:[\s().\-/+]|%20|%2[dDfF]|%28|%29)*`;

/** `digits` with separators allowed between them. */
const spaced = (digits: string): string => [...digits].join(SEPARATOR);

/** The number `typed` names, as the operations read it; undefined when it is no phone number. */
export function phoneForms(typed: string, defaultPhoneRegion: Region): PhoneForms | undefined {
  const e164 = readPhone(typed, defaultPhoneRegion);
  if (e164 === undefined) return undefined;
  const spelled = phoneSpellings(e164);
  if (!spelled) return undefined;
  const { countryCallingCode: cc, nationalNumber: nsn, nationalPrefix: prefix } = spelled;

  // The number: an international prefix and the country code, or the national prefix, or nothing,
  // then the national number; never part of a longer run of digits.
  const international = String.raw`(?:(?:\+|%2[bB]|00)${SEPARATOR})?${spaced(cc)}${SEPARATOR}(?:\(0\)${SEPARATOR})?`;
  const national = prefix ? `${spaced(prefix)}${SEPARATOR}` : undefined;
  const source =
    `(?<![0-9])(?:${international}${national ? `|${national}` : ''})?` + `${spaced(nsn)}(?![0-9])`;
  const finder = new RegExp(source);
  const replacer = new RegExp(source, 'g');

  const forms = [
    ...new Set([
      e164,
      spelled.international,
      spelled.national,
      e164.slice(1),
      `${prefix}${nsn}`,
      `00${cc}${nsn}`,
      nsn,
    ]),
  ];
  const scrub = (text: string): string => text.replace(replacer, ERASED);
  return {
    e164,
    forms,
    pattern: `%${[...nsn].join('%')}%`,
    digits: nsn,
    holds: (text) => typeof text === 'string' && finder.test(text),
    scrub,
    scrubNullable: (text) => (text === null ? null : scrub(text)),
  };
}
