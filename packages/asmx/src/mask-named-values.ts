import { MASK } from '@school/contract';
import { escapeAt, secretNamePattern, wordCharAt, wordCharBefore } from './secret-names.js';

/**
 * Masks the value after every secret name in a text of any shape — a URL's path parameters
 * (`;code=…`) and query, a form, JSON (`"code": "…"`), header-like text (`code: …`) — whether or
 * not anything could read it: `name [junk] [quotes, whitespace] separator [whitespace] [quote] value`.
 *
 * - The name is found as a word in any case and with any character percent-encoded
 *   (secret-names.ts).
 * - Junk between the name and the separator is anything but whitespace and a delimiter:
 *   `Code%00=`, `code\0=`, `code[]=`, `code.x=`, `code+=`, `"code":` are all the code. Over-masking
 *   is the safe side: no reader takes `code[]` for `code`, but a person who wrote it meant it.
 * - The separator is `=`, or `:` when `colon` (the default), also percent-encoded (`%3D`, `%3A`).
 * - The value runs to the first delimiter: `& ; / ? # " ' < >` or whitespace. A code is letters and
 *   digits, maybe percent-encoded, so it goes whole; what follows a delimiter (the next field, the
 *   rest of the path) stays readable. An empty value stays empty.
 *
 * One pass, linear in the text: the name search has no quantifiers, and after each name the search
 * resumes where its junk, separator or value ended (a name inside junk would end in the same place).
 */
export function maskNamedValues(text: string, names: readonly string[], colon = true): string {
  if (names.length === 0 || text.length === 0) return text;
  const n = text.length;
  const pattern = secretNamePattern(names);
  let out = '';
  let last = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    const afterName = m.index + m[0].length;
    if (wordCharBefore(text, m.index) || wordCharAt(text, afterName)) continue;
    // Junk, then whitespace, then the separator.
    let at = afterName;
    let separator = 0;
    for (; at < n; at++) {
      separator = separatorAt(text, at, colon);
      const c = text.charCodeAt(at);
      if (separator > 0 || isDelimiter(c) || isSpace(c)) break;
    }
    if (separator === 0) {
      // Quotes closing the name (`"code": …`) and whitespace.
      while (at < n && (isSpace(text.charCodeAt(at)) || isQuote(text.charCodeAt(at)))) at++;
      separator = separatorAt(text, at, colon);
    }
    if (separator === 0) {
      pattern.lastIndex = at;
      continue;
    }
    let start = at + separator;
    while (start < n && isSpace(text.charCodeAt(start))) start++;
    if (isQuote(text.charCodeAt(start))) start++;
    let end = start;
    while (end < n && !isDelimiter(text.charCodeAt(end)) && !isSpace(text.charCodeAt(end))) end++;
    if (end > start) {
      out += text.slice(last, start) + MASK;
      last = end;
    }
    pattern.lastIndex = end;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** The length of the separator at `at` (`=`, `:`, or their escapes), or 0. */
function separatorAt(text: string, at: number, colon: boolean): number {
  const c = text.charCodeAt(at);
  if (c === 0x3d /* = */ || (colon && c === 0x3a) /* : */) return 1;
  if (c !== 0x25 /* % */) return 0;
  const escaped = escapeAt(text, at);
  return escaped === 0x3d || (colon && escaped === 0x3a) ? 3 : 0;
}

const isQuote = (c: number): boolean => c === 0x22 || c === 0x27;

const isSpace = (c: number): boolean => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/** `& ; / ? # " ' < >`: where a value ends in a URL, a form, JSON, XML or a header. */
function isDelimiter(c: number): boolean {
  switch (c) {
    case 0x26: // &
    case 0x3b: // ;
    case 0x2f: // /
    case 0x3f: // ?
    case 0x23: // #
    case 0x22: // "
    case 0x27: // '
    case 0x3c: // <
    case 0x3e: // >
      return true;
    default:
      return false;
  }
}
