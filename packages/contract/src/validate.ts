import {
  type CountryCode,
  isSupportedCountry,
  type NumberType,
  type PhoneNumber,
  parsePhoneNumberFromString,
} from 'libphonenumber-js/max';
import type { OperationDef, ParamDef } from './operations.js';
import { examplePhone } from './phone-examples.js';

/** Longest value a `text` parameter may have; a bound on what we store and echo. */
export const MAX_TEXT_LENGTH = 1024;
const CODE_PATTERN = /^[A-Za-z0-9]{1,16}$/;

export interface ValidateOptions {
  /** ISO 3166 region used for phone numbers written without a country code. */
  readonly defaultPhoneRegion?: CountryCode | undefined;
  /**
   * Who reads the messages: `wire` (the default) words them for the app that called, as the
   * faults and plain-text errors carry them (docs/faults.md; fixed by the golden files); `staff`
   * for a person at the console's Send form, naming no parameter and asking for what is missing.
   */
  readonly wording?: 'wire' | 'staff' | undefined;
}

export type ParamError = {
  readonly param: string;
  readonly reason: 'missing' | 'invalid';
  /** A sentence for the caller: what is wrong and how to fix it. */
  readonly message: string;
};

export type ValidationResult =
  | { readonly ok: true; readonly values: Readonly<Record<string, string>> }
  | { readonly ok: false; readonly error: ParamError };

/** Shortens a caller's value before it is quoted back in a message. */
function quote(value: string): string {
  return value.length > 40 ? `'${value.slice(0, 40)}…'` : `'${value}'`;
}

/** Checks one value against its rule; returns the normalised value or an error message. */
export function checkParam(
  param: ParamDef,
  value: string,
  options: ValidateOptions = {},
): { ok: true; value: string } | { ok: false; message: string } {
  const staff = options.wording === 'staff';
  switch (param.rule) {
    case 'text':
      if (value.length <= MAX_TEXT_LENGTH) return { ok: true, value };
      return {
        ok: false,
        message: staff
          ? `Too long: at most ${MAX_TEXT_LENGTH} characters.`
          : `Invalid ${param.name}: longer than ${MAX_TEXT_LENGTH} characters.`,
      };
    case 'code':
      if (CODE_PATTERN.test(value)) return { ok: true, value };
      if (!staff)
        return { ok: false, message: `Invalid ${param.name}: it must be 1 to 16 letters or digits.` };
      return {
        ok: false,
        message: value === '' ? 'Enter the code.' : 'A code is 1 to 16 letters or digits, nothing else.',
      };
    case 'phone': {
      const trimmed = value.trim();
      const parsed =
        trimmed.length > 0 && trimmed.length <= 64
          ? parsePhoneNumberFromString(trimmed, options.defaultPhoneRegion)
          : undefined;
      if (parsed?.isValid()) {
        remember(parsed);
        return { ok: true, value: parsed.number };
      }
      // An example the server takes: a mobile of the region national numbers are read in.
      const example = examplePhone(options.defaultPhoneRegion);
      const eg = example ? `, e.g. ${example}` : '';
      if (staff) {
        if (trimmed === '') return { ok: false, message: 'Enter a phone number.' };
        const which = param.secret ? 'This' : quote(value);
        return {
          ok: false,
          message: `${which} is not a valid phone number. Write it with + and the country code${eg}.`,
        };
      }
      const shown = param.secret ? '' : ` ${quote(value)}`;
      return {
        ok: false,
        message: `Invalid ${param.name}:${shown} is not a valid phone number. Send it in international format, with + and the country code${eg}.`,
      };
    }
  }
}

/**
 * Validates an operation's parameters. `read` returns a parameter's value, or undefined when the
 * caller did not send it. Every listed parameter is required; an empty string is a value.
 * Parameters are checked in the table's order and the first problem is reported.
 */
export function validateParams(
  op: OperationDef,
  read: (name: string) => string | undefined,
  options: ValidateOptions = {},
): ValidationResult {
  const values: Record<string, string> = Object.create(null);
  for (const param of op.params) {
    const raw = read(param.name);
    if (raw === undefined) {
      return {
        ok: false,
        error: { param: param.name, reason: 'missing', message: `Missing parameter: ${param.name}.` },
      };
    }
    const checked = checkParam(param, raw, options);
    if (!checked.ok) {
      return { ok: false, error: { param: param.name, reason: 'invalid', message: checked.message } };
    }
    values[param.name] = checked.value;
  }
  return { ok: true, values };
}

/** The values with every secret parameter masked, for history and logs. */
export function maskParams(
  op: OperationDef,
  values: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const masked: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const def = op.params.find((p) => p.name === name);
    masked[name] = def?.secret ? MASK : value;
  }
  return masked;
}

export const MASK = '***';

/** Whether libphonenumber knows the ISO 3166 region code (for DEFAULT_PHONE_REGION). */
export function isValidRegion(region: string): region is CountryCode {
  return isSupportedCountry(region);
}

/**
 * A national number read in `region`, in international form for a person to check
 * (`07911 123456` in GB → `+44 7911 123456`); undefined when it is no valid number there, or
 * already international.
 */
export function nationalAsInternational(value: string, region: string): string | undefined {
  const trimmed = value.trim();
  if (trimmed === '' || trimmed.length > 64 || trimmed.startsWith('+') || !isValidRegion(region))
    return undefined;
  const parsed = parsePhoneNumberFromString(trimmed, region);
  return parsed?.isValid() ? parsed.formatInternational() : undefined;
}

/**
 * What an E.164 number is: its country (ISO 3166; undefined for the international networks and
 * other numbers of no country) and its kind by libphonenumber's full metadata (`MOBILE`,
 * `FIXED_LINE`, `PREMIUM_RATE`, …; undefined when not known).
 */
export function phoneKind(phone: string): { country: string | undefined; type: NumberType | undefined } {
  const known = justValidated.get(phone);
  if (known) justValidated.delete(phone);
  const parsed = known ?? parsePhoneNumberFromString(phone);
  return { country: parsed?.country, type: parsed?.getType() };
}

/**
 * Numbers checkParam has just found valid, by E.164, for phoneKind to read without parsing them
 * again: parsing is most of a number's cost (with full metadata: docs/performance.md), and
 * AuthCode asks both, one after the other. Bounded (the oldest go first) and emptied as they are
 * read.
 */
const justValidated = new Map<string, PhoneNumber>();
const JUST_VALIDATED_MAX = 256;

function remember(parsed: PhoneNumber): void {
  if (justValidated.size >= JUST_VALIDATED_MAX) {
    const oldest = justValidated.keys().next().value;
    if (oldest !== undefined) justValidated.delete(oldest);
  }
  justValidated.set(parsed.number, parsed);
}

export type { NumberType };

/** The country calling code of an E.164 number (`44` for +447911123456), for per-country limits. */
export function countryCallingCode(phone: string): string | undefined {
  return parsePhoneNumberFromString(phone)?.countryCallingCode;
}
