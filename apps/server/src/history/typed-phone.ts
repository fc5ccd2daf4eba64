import { checkParam, type ParamDef, type ValidateOptions } from '@school/contract';

type Region = ValidateOptions['defaultPhoneRegion'];

/** The Phone filter's rule: AuthCode's phone parameter's. */
export const PHONE_PARAM: ParamDef = {
  name: 'phone',
  rule: 'phone',
  description: 'A phone number',
  example: '+447400123456',
};

/**
 * What a phone number is written with: digits, `+`, spaces and the usual separators. The rule
 * alone would read a number out of a sentence ("call +447400123456"); a search for that sentence
 * is a search for text.
 */
const PHONE_CHARACTERS = /^[\d+\s().\-/]+$/;

/** A number in double quotes: the text itself, not the phone (`"07400 123456"`). */
const QUOTED = /^"([^"]+)"$/;

/** A phone as History's Phone filter reads it: E.164, or undefined when it is none. */
export function readPhone(text: string, defaultPhoneRegion: Region): string | undefined {
  const checked = checkParam(PHONE_PARAM, text, { defaultPhoneRegion, wording: 'staff' });
  return checked.ok ? checked.value : undefined;
}

/**
 * History's search text as it is searched. A text that is wholly a phone number (in any spelling
 * the Phone filter takes) is a search for that number's calls: the Phone filter's lookup, through
 * the index of the calls' phone, complete, where free text would examine every call under its
 * time budget. The same number in double quotes is searched as text (the quotes dropped): the
 * calls recorded before calls kept their phone, and those that only mention it
 * (docs/operations.md#call-records).
 *
 * A phone filter set as well, to another number, leaves the text as text: both hold only if a
 * call of that filter's number mentions this one, and that search reads the filter's index too.
 */
export function searchedAs<
  F extends { readonly q?: string | undefined; readonly phone?: string | undefined },
>(filters: F, defaultPhoneRegion: Region): { filters: F; phone?: string } {
  const q = filters.q?.trim();
  if (!q) return { filters };
  const quoted = QUOTED.exec(q)?.[1]?.trim();
  if (quoted !== undefined) {
    const isPhone = PHONE_CHARACTERS.test(quoted) && readPhone(quoted, defaultPhoneRegion) !== undefined;
    return { filters: isPhone ? { ...filters, q: quoted } : filters };
  }
  if (!PHONE_CHARACTERS.test(q)) return { filters };
  const phone = readPhone(q, defaultPhoneRegion);
  if (phone === undefined || (filters.phone !== undefined && filters.phone !== phone)) return { filters };
  return { filters: { ...filters, q: undefined, phone }, phone };
}
