import { type NumberType, phoneKind } from '@school/contract';

/**
 * Where AuthCode may send an SMS (docs/security.md#sms-pumping). The endpoint takes no credential,
 * so anyone who finds it can make the school pay for SMS: "SMS pumping" feeds it numbers whose
 * operators share the fee (premium rate, personal and VoIP numbers, international networks, far
 * countries). As SMS providers advise (geo permissions), codes go only to the countries allowed,
 * and only to the kinds of number a person reads texts on, whatever the country.
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

/**
 * The kinds a code goes to: an allow-list, so a kind libphonenumber adds later is refused until
 * someone decides otherwise. North American numbers are all FIXED_LINE_OR_MOBILE, as the
 * metadata cannot tell which they are.
 */
const SENT_TO: ReadonlySet<NumberType> = new Set<NumberType>(['MOBILE', 'FIXED_LINE_OR_MOBILE']);

/** Words that name a refused kind; they only name it, they decide nothing. */
const KIND_WORDS: ReadonlyMap<NumberType, string> = new Map<NumberType, string>([
  ['PREMIUM_RATE', 'premium-rate numbers'],
  ['SHARED_COST', 'shared-cost numbers'],
  ['TOLL_FREE', 'toll-free numbers'],
  ['UAN', 'universal access numbers'],
  ['VOICEMAIL', 'voicemail numbers'],
  ['PAGER', 'pagers'],
  ['PERSONAL_NUMBER', 'personal numbers'],
  ['VOIP', 'VoIP numbers'],
  [undefined, 'numbers of unknown kind'],
]);

/** Why a code may not go to a number of this kind; undefined when it may. */
export function kindRefusal(type: NumberType, allowFixedLine: boolean): string | undefined {
  if (SENT_TO.has(type)) return undefined;
  if (type === 'FIXED_LINE') {
    return allowFixedLine ? undefined : 'codes are sent to mobile numbers only, and this is a landline.';
  }
  return `codes are not sent to ${KIND_WORDS.get(type) ?? `numbers of this kind (${type})`}.`;
}

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
      const refused = kindRefusal(type, options.allowFixedLine);
      return refused ? { ok: false, reason: 'number-type', message: refused } : { ok: true };
    },
  };
}

export type SmsDestinations = ReturnType<typeof createSmsDestinations>;
