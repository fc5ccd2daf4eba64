import { examplePhone, regionsSharingCallingCode } from '@school/contract';

/** Where AuthCode sends codes (GET /api/service): null, every country; undefined, not known yet. */
type Allowed = readonly string[] | null | undefined;

/**
 * The example phone the Send form shows and fills in: a mobile of a country the server sends codes
 * to, so that sending it works. The region national numbers are read in when codes go there, else
 * the first country codes go to, else (every country, or not known yet) the GB mobile.
 */
export function phoneExampleFor(region: string | undefined, allowed: Allowed): string | undefined {
  if (!allowed) return examplePhone(region);
  if (region && allowed.includes(region)) return examplePhone(region);
  return examplePhone(allowed[0]);
}

const names = new Intl.DisplayNames(['en-GB'], { type: 'region' });
const list = new Intl.ListFormat('en-GB', { type: 'conjunction' });
/** The names, of the territories that share a calling code with a few others, said with "the". */
const WITH_THE = new Set(['AX', 'BQ', 'CC', 'GB', 'IM', 'US']);
const nameOf = (region: string) => names.of(region) ?? region;
/** The regions' names in running text, in alphabetical order. */
const named = (regions: readonly string[]) =>
  list.format(
    [...regions]
      .sort((a, b) => nameOf(a).localeCompare(nameOf(b)))
      .map((r) => (WITH_THE.has(r) ? `the ${nameOf(r)}` : nameOf(r))),
  );
/** More territories than this are counted, not named: +1 has 25. */
const MOST_NAMED = 3;

/**
 * For staff who type a national number: the territories whose numbers share the region's calling
 * code (Guernsey, Jersey and the Isle of Man share +44 with GB) and that codes do not go to, as
 * codes go only to the countries SMS_ALLOWED_COUNTRIES lists (docs/security.md#sms-pumping).
 * Undefined when there are none, or when codes go to every country.
 */
export function sharedCallingCodeNote(region: string, allowed: Allowed): string | undefined {
  if (!allowed) return undefined;
  const { callingCode, regions } = regionsSharingCallingCode(region);
  const refused = regions.filter((r) => !allowed.includes(r));
  if (refused.length === 0) return undefined;
  const which =
    refused.length > MOST_NAMED ? `${refused.length} other countries and territories` : named(refused);
  return `Numbers of ${which} share +${callingCode}: codes go to them only if SMS_ALLOWED_COUNTRIES lists them.`;
}
