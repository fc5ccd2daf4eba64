import { MASK } from '@school/contract';
import { escapeAt, NameFinder, wordCharAt, wordCharBefore } from './secret-names.js';

/**
 * How `:` separates a name from its value: `loose` as `=` does (a request's text: `"code": "…"`,
 * `code : …`), or only `adjacent` to both (what the server wrote: an echoed `;code:4821`, but not its
 * own `Invalid code: it must be…` nor a JSON answer's `"code":"A code is…"`).
 */
export type ColonRule = 'loose' | 'adjacent';

/**
 * Masks the value after every secret name in a text of any shape — a URL's path parameters
 * (`;code=…`) and query, a form, JSON (`"code": "…"`), header-like text (`code: …`), a tag
 * (`<code>…`) wherever it stands — whether or not anything could read it.
 *
 * - The name is found as a word in any case and with any character percent-encoded
 *   (secret-names.ts).
 * - `name [junk] [quotes, whitespace] separator [whitespace] [quote] value`. Junk between the name
 *   and the separator is anything but whitespace and a delimiter: `Code%00=`, `code\0=`,
 *   `code[]=`, `code.x=`, `code+=`, `"code":` are all the code. Over-masking is the safe side: no
 *   reader takes `code[]` for `code`, but a person who wrote it meant it. The separator is `=` or
 *   `:` (`colon`), also percent-encoded (`%3D`, `%3A`). The value runs to the first delimiter:
 *   `& ; / ? # " ' < >` or whitespace. A code is letters and digits, maybe percent-encoded, so it
 *   goes whole; what follows a delimiter (the next field, the rest of the path) stays readable.
 * - Else, when the name opens a tag (`<code …>`, `<n:code>`): the text after the tag's `>`, up to
 *   the next `<`. The XML pass masks real elements by their structure; this finds the ones it
 *   cannot see as elements (inside a comment, CDATA or an attribute value a byte made unclosed).
 * - An empty value stays empty.
 *
 * One pass, linear in the text: the name search is (secret-names.ts); after each name it
 * resumes where its junk, separator or value ended (a name inside junk would end in the same
 * place), and the `>` closing a tag is looked for once per stretch of text.
 */
export function maskNamedValues(text: string, names: readonly string[], colon: ColonRule = 'loose'): string {
  if (names.length === 0 || text.length === 0) return text;
  const n = text.length;
  const finder = new NameFinder(text, names);
  const value: Value = { start: 0, end: 0 };
  let out = '';
  let last = 0;
  let from = 0;
  const mask = (start: number, end: number) => {
    // Masked already (by the XML pass, or the same text masked twice): left as it is.
    if (end <= start || start < last || (end - start === MASK.length && text.startsWith(MASK, start))) return;
    out += text.slice(last, start) + MASK;
    last = end;
  };
  /**
   * Masks the value after the name found at `at`, if it is a word and has one, and moves `from`
   * on; answers whether it was a word without a value (perhaps a tag's name).
   */
  const separated = (at: number): boolean => {
    const afterName = finder.end;
    from = afterName;
    if (wordCharBefore(text, at) || wordCharAt(text, afterName)) return false;
    const found = separatedValue(text, afterName, colon, value);
    if (found) mask(value.start, value.end);
    from = value.end;
    return !found;
  };
  /** The first `>` at or after the name of the last tag looked at (-1: none left). */
  let gt = -2;
  for (let at = finder.find(0); at !== -1; at = finder.find(from)) {
    const afterName = finder.end;
    if (!separated(at) || !opensTag(text, at)) continue;
    // A tag named like the secret: the values in it (its attributes), then its text.
    if (gt !== -1 && gt < afterName) gt = text.indexOf('>', afterName);
    if (gt === -1) continue;
    for (let inner = finder.find(from, gt); inner !== -1; inner = finder.find(from, gt)) separated(inner);
    let start = gt + 1;
    while (start < n && isSpace(text.charCodeAt(start))) start++;
    const end = indexOrEnd(text, '<', start);
    mask(start, end);
    from = Math.max(from, end);
  }
  return last === 0 ? text : out + text.slice(last);
}

/** A stretch of the text: a value, or (no value) where the search goes on in `end`. */
interface Value {
  start: number;
  end: number;
}

/**
 * Whether a value follows the name ending at `from`: `[junk] [quotes, whitespace] separator
 * [whitespace] [quote]`, then the value, into `value`; else `value.end` is where the search goes on.
 */
function separatedValue(text: string, from: number, colon: ColonRule, value: Value): boolean {
  const n = text.length;
  let at = from;
  let separator = 0;
  for (; at < n; at++) {
    separator = separatorAt(text, at, true);
    const c = text.charCodeAt(at);
    if (separator > 0 || isDelimiter(c) || isSpace(c)) break;
  }
  let start: number;
  if (separator > 0 && colon === 'adjacent' && isColon(text, at)) {
    // Adjacent on both sides, or nothing.
    start = at + separator;
    const c = text.charCodeAt(start);
    if (start >= n || isSpace(c) || isQuote(c) || isDelimiter(c)) {
      value.end = start;
      return false;
    }
  } else {
    if (separator === 0) {
      // Quotes closing the name (`"code": …`) and whitespace.
      while (at < n && (isSpace(text.charCodeAt(at)) || isQuote(text.charCodeAt(at)))) at++;
      separator = separatorAt(text, at, colon === 'loose');
      if (separator === 0) {
        value.end = at;
        return false;
      }
    }
    start = at + separator;
    while (start < n && isSpace(text.charCodeAt(start))) start++;
    if (isQuote(text.charCodeAt(start))) start++;
  }
  let end = start;
  while (end < n && !isDelimiter(text.charCodeAt(end)) && !isSpace(text.charCodeAt(end))) end++;
  value.start = start;
  value.end = end;
  return true;
}

/** Whether the name at `at` opens a tag: `<code`, or `<prefix:code` with a prefix of 64 characters at most. */
function opensTag(text: string, at: number): boolean {
  const before = text.charCodeAt(at - 1);
  if (before === 0x3c /* < */) return true;
  if (before !== 0x3a /* : */) return false;
  for (let i = at - 2; i >= 0 && i >= at - 66; i--) {
    const c = text.charCodeAt(i);
    if (c === 0x3c) return i < at - 2;
    if (c === 0x3a || c === 0x3e || isSpace(c) || isQuote(c) || c === 0x2f) return false;
  }
  return false;
}

const indexOrEnd = (text: string, search: string, from: number): number => {
  const at = text.indexOf(search, from);
  return at === -1 ? text.length : at;
};

const isColon = (text: string, at: number): boolean =>
  text.charCodeAt(at) === 0x3a || escapeAt(text, at) === 0x3a;

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
