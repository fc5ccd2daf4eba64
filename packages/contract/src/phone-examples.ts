import {
  type CountryCode,
  getCountries,
  getCountryCallingCode,
  getExampleNumber,
  isSupportedCountry,
  parsePhoneNumberFromString,
} from 'libphonenumber-js/max';
import mobileExamples from 'libphonenumber-js/mobile/examples';
import { EXAMPLE_PHONE } from './operations.js';

/** The kinds of number AuthCode sends codes to in every setup (limits/sms-destinations.ts). */
const TEXTABLE = new Set(['MOBILE', 'FIXED_LINE_OR_MOBILE']);

const byRegion = new Map<string, string | undefined>();

/**
 * An example phone (E.164) for people of `region`: libphonenumber's own example of a mobile of that
 * region, so the default setup of the region takes it; EXAMPLE_PHONE with no region. Undefined when
 * the region has no example that reads as its own mobile (a few territories sharing a numbering
 * plan, e.g. IM, whose example libphonenumber reads as GB): better no example than one refused.
 */
export function examplePhone(region?: string | null): string | undefined {
  if (!region) return EXAMPLE_PHONE;
  // Cached by known region only, so the map holds at most one entry per region libphonenumber knows.
  if (!isSupportedCountry(region)) return undefined;
  if (!byRegion.has(region)) byRegion.set(region, regionExample(region));
  return byRegion.get(region);
}

function regionExample(region: CountryCode): string | undefined {
  const number = getExampleNumber(region, mobileExamples)?.number;
  const parsed = number ? parsePhoneNumberFromString(number) : undefined;
  const type = parsed?.getType();
  return parsed?.isValid() && parsed.country === region && type && TEXTABLE.has(type)
    ? parsed.number
    : undefined;
}

/**
 * The other regions whose numbers share `region`'s country calling code (`GB` → GG, IM, JE for
 * +44; `US` → CA and the Caribbean for +1): codes go to them only if SMS_ALLOWED_COUNTRIES lists
 * them. Empty for an unknown region.
 */
export function regionsSharingCallingCode(region: string): { callingCode: string; regions: CountryCode[] } {
  if (!isSupportedCountry(region)) return { callingCode: '', regions: [] };
  const callingCode = getCountryCallingCode(region);
  const regions = getCountries().filter((r) => r !== region && getCountryCallingCode(r) === callingCode);
  return { callingCode, regions };
}
