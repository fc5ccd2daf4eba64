import { type NumberType, phoneKind } from '@school/contract';

/**
 * Where AuthCode may send an SMS (docs/security.md#sms-pumping). The endpoint takes no credential,
 * so anyone who finds it can make the school pay for SMS: "SMS pumping" feeds it numbers whose
 * operators share the fee (premium rate, international networks, far countries). As SMS providers
 * advise (geo permissions), codes go only to the countries allowed, and never to the kinds of
 * number that exist to be billed or cannot read a code, whatever the country.
 */
export interface SmsDestinationOptions {
  /** ISO 3166 regions codes may go to; null: every country. */
  readonly allowedCountries: readonly string[] | null;
  /** Whether fixed lines (SMS read out by voice, where supported) are allowed; mobiles always are. */
  readonly allowFixedLine: boolean;
}

export type DestinationCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'country' | 'number-type'; readonly message: string };

/** Number types a code never goes to, with the words for a refusal. */
const REFUSED_TYPES: Readonly<Partial<Record<NonNullable<NumberType>, string>>> = {
  PREMIUM_RATE: 'premium-rate numbers',
  SHARED_COST: 'shared-cost numbers',
  TOLL_FREE: 'toll-free numbers',
  UAN: 'universal access numbers',
  VOICEMAIL: 'voicemail numbers',
  PAGER: 'pagers',
};

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });
const countryName = (region: string): string => regionNames.of(region) ?? region;

export function createSmsDestinations(options: SmsDestinationOptions) {
  const allowed = options.allowedCountries === null ? null : new Set(options.allowedCountries);
  return {
    ...options,
    /** Whether a code may go to `phone` (E.164, already valid). */
    check(phone: string): DestinationCheck {
      const { country, type } = phoneKind(phone);
      // A number of no country: the international networks, satellite phones, global premium
      // and freephone ranges (+800, +808, +870, +881, +882, +883, +888, +979).
      if (!country) {
        return {
          ok: false,
          reason: 'number-type',
          message: 'codes are not sent to international network or satellite numbers.',
        };
      }
      if (allowed && !allowed.has(country)) {
        return {
          ok: false,
          reason: 'country',
          message: `codes are not sent to numbers of ${countryName(country)} (${country}).`,
        };
      }
      const refused = type === undefined ? undefined : REFUSED_TYPES[type];
      if (refused) return { ok: false, reason: 'number-type', message: `codes are not sent to ${refused}.` };
      if (type === 'FIXED_LINE' && !options.allowFixedLine) {
        return {
          ok: false,
          reason: 'number-type',
          message: 'codes are sent to mobile numbers only, and this is a landline.',
        };
      }
      return { ok: true };
    },
  };
}

export type SmsDestinations = ReturnType<typeof createSmsDestinations>;
