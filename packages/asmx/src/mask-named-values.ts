import { MASK } from '@school/contract';
import { escapeAt, NameFinder } from './secret-names.js';

/**
 * Whose text it is. A `request`'s: `:` separates as `=` does (`"code": "…"`, `code : …`), and tags
 * are read. An `answer`'s (what the server wrote, which may echo the request): `:` only with
 * nothing between it, the name and the value (an echoed `;code:4821`, not its own `Invalid code:
 * it must be…` nor a JSON answer's `"code":"A code is…"`), and no tags (a SOAP 1.2 fault's
 * `<soap:Code>` is its own).
 */
export type TextKind = 'request' | 'answer';

/** Values `found` collects at most: a client's own code comes first; the rest is a hostile request's. */
export const FOUND_LIMIT = 64;

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
 *   `:` (see TextKind), also percent-encoded (`%3D`, `%3A`). The value runs to the first delimiter:
 *   `& ; / ? # " ' < >` or whitespace. A code is letters and digits, maybe percent-encoded, so it
 *   goes whole; what follows a delimiter (the next field, the rest of the path) stays readable.
 * - And in a request, when the name opens a tag (`<code …>`, `<n:code>`): the values in the tag,
 *   and the text after it up to its end tag (`</code`, `</n:code`), or to the end of the text when
 *   none comes; after a self-closing one, up to a stray end tag of it, or else the next start tag.
 *   The XML pass masks real elements by their structure; this finds those it cannot see as
 *   elements (inside a comment, CDATA, a processing instruction, or an attribute value a byte
 *   left unclosed, or another tag), and codes bytes made a tag of (`<code/>><4821</code>`).
 * - An empty value stays empty. The values masked go into `found` (the first FOUND_LIMIT), for the
 *   texts that may echo them decoded (mask.ts, echoForms).
 *
 * One pass, linear in the text: the name search is (secret-names.ts); after each name it
 * resumes where its junk, separator or value ended (a name inside junk would end in the same
 * place), and the `>` closing a tag is looked for once per stretch of text.
 */
export function maskNamedValues(
  text: string,
  names: readonly string[],
  kind: TextKind = 'request',
  found?: string[],
): string {
  if (names.length === 0 || text.length === 0) return text;
  const n = text.length;
  const finder = new NameFinder(text, names);
  // Most texts hold no name at all: nothing else is made for them.
  if (finder.find(0) === -1) return text;
  const value: Value = { start: 0, end: 0 };
  let out = '';
  let last = 0;
  let from = 0;
  const mask = (start: number, end: number) => {
    // Masked already (by the XML pass, or the same text masked twice): left as it is.
    if (end <= start || start < last || (end - start === MASK.length && text.startsWith(MASK, start))) return;
    if (found && found.length < FOUND_LIMIT) found.push(text.slice(start, end));
    out += text.slice(last, start) + MASK;
    last = end;
  };
  /** Masks the value after the name the finder found last, if it has one, and moves `from` on. */
  const separated = (): void => {
    if (separatedValue(text, finder.end, kind, value)) mask(value.start, value.end);
    from = value.end;
  };
  /** Where the secret's next end tag starts, before any start tag of it (-1: none). */
  const endTag = (start: number, stopAtStartTag: boolean): number => {
    for (let name = finder.find(start); name !== -1; name = finder.find(finder.end)) {
      const lt = tagStart(text, name, true);
      if (lt !== -1) return lt;
      if (stopAtStartTag && tagStart(text, name, false) !== -1) return -1;
    }
    return -1;
  };
  /** The first `>` at or after the name of the last tag looked at (-1: none left). */
  let gt = -2;
  for (let at = finder.find(0); at !== -1; at = finder.find(from)) {
    const afterName = finder.end;
    // The XML pass's work, passed at once: an end tag (`</code>`), an element it masked
    // (`<code>***</`).
    if (text.charCodeAt(afterName) === 0x3e /* > */ && kind === 'request') {
      if (text.charCodeAt(at - 1) === 0x2f /* / */ && tagStart(text, at, true) !== -1) {
        from = afterName + 1;
        continue;
      }
      const masked = afterName + 1 + MASK.length;
      if (
        text.startsWith(MASK, afterName + 1) &&
        text.charCodeAt(masked) === 0x3c /* < */ &&
        text.charCodeAt(masked + 1) === 0x2f /* / */ &&
        tagStart(text, at, false) !== -1
      ) {
        from = masked;
        continue;
      }
    }
    separated();
    if (kind === 'answer' || tagStart(text, at, false) === -1) continue;
    // A tag named like the secret: the values in it (its attributes), then its text.
    if (gt !== -1 && gt < afterName) gt = text.indexOf('>', afterName);
    if (gt === -1) continue;
    for (let inner = finder.find(from, gt); inner !== -1; inner = finder.find(from, gt)) separated();
    let start = gt + 1;
    while (start < n && isSpace(text.charCodeAt(start))) start++;
    // Up to its end tag, or the end; after a self-closing one, up to a stray end tag of it
    // (`<code/>><4821</code>`: bytes made the code a tag), or else the next start tag.
    const selfClosing = text.charCodeAt(gt - 1) === 0x2f; /* / */
    let end = endTag(start, selfClosing);
    if (end === -1) end = selfClosing ? nextStartTag(text, start) : n;
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
function separatedValue(text: string, from: number, kind: TextKind, value: Value): boolean {
  const n = text.length;
  let at = from;
  let separator = 0;
  for (; at < n; at++) {
    separator = separatorAt(text, at, true);
    const c = text.charCodeAt(at);
    if (separator > 0 || isDelimiter(c) || isSpace(c)) break;
  }
  let start: number;
  if (separator > 0 && kind === 'answer' && isColon(text, at)) {
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
      separator = separatorAt(text, at, kind === 'request');
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

/**
 * Where the tag whose name starts at `at` begins — `<code`, `<n:code` (a prefix of 64 characters
 * at most), or with `closing`, `</code`, `</n:code` — the index of its `<`; -1 when it is no tag.
 */
function tagStart(text: string, at: number, closing: boolean): number {
  let i = at - 1;
  if (text.charCodeAt(i) === 0x3a /* : */) {
    const prefixEnd = --i;
    for (const stop = Math.max(0, at - 66); i >= stop && isPrefixChar(text.charCodeAt(i)); ) i--;
    if (i === prefixEnd) return -1;
  }
  if (closing) {
    if (text.charCodeAt(i) !== 0x2f /* / */) return -1;
    i--;
  }
  return text.charCodeAt(i) === 0x3c /* < */ ? i : -1;
}

const isPrefixChar = (c: number): boolean =>
  !(c === 0x3a || c === 0x3c || c === 0x3e || c === 0x2f || isSpace(c) || isQuote(c));

/**
 * Where the next start tag or processing instruction starts, or the text's end: comments, CDATA,
 * declarations and end tags are passed (after `<code/>`, `</4821>` is a code a byte made a tag of).
 */
function nextStartTag(text: string, from: number): number {
  for (let at = text.indexOf('<', from); at !== -1; at = text.indexOf('<', at + 1)) {
    const c = text.charCodeAt(at + 1);
    if (c !== 0x21 /* ! */ && c !== 0x2f /* / */) return at;
  }
  return text.length;
}

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
