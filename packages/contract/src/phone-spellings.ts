import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/** The ways one phone number is written: what a text holding it may hold. */
export interface PhoneSpellings {
  /** `+447400123456`. */
  readonly e164: string;
  /** The country calling code's digits: `44`. */
  readonly countryCallingCode: string;
  /** The national (significant) number's digits, without a national prefix: `7400123456`. */
  readonly nationalNumber: string;
  /** The national prefix dialled before it at home (`0` in GB); empty where there is none. */
  readonly nationalPrefix: string;
  /** As written at home: `07400 123456`. */
  readonly national: string;
  /** As written abroad: `+44 7400 123456`. */
  readonly international: string;
}

/**
 * How the E.164 number `e164` is written, by libphonenumber's metadata (the library that reads
 * AuthCode's phones: validate.ts); undefined when it is no valid number. The national prefix is
 * what the national form's digits hold before the national number.
 */
export function phoneSpellings(e164: string): PhoneSpellings | undefined {
  const parsed = parsePhoneNumberFromString(e164);
  if (!parsed?.isValid()) return undefined;
  const nationalNumber = String(parsed.nationalNumber);
  const national = parsed.formatNational();
  const nationalDigits = national.replace(/\D/g, '');
  const nationalPrefix = nationalDigits.endsWith(nationalNumber)
    ? nationalDigits.slice(0, nationalDigits.length - nationalNumber.length)
    : '';
  return {
    e164: parsed.number,
    countryCallingCode: String(parsed.countryCallingCode),
    nationalNumber,
    nationalPrefix,
    national,
    international: parsed.formatInternational(),
  };
}
