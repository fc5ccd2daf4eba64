import { MASK } from '@school/contract';
import { maskMultipartParts } from './mask-multipart.js';
import { FOUND_LIMIT, maskNamedValues } from './mask-named-values.js';
import { maskValues } from './mask-values.js';

export { maskValues };

/**
 * Masks the values of secret parameters (auth codes) in what a request carried before it is
 * stored or logged (docs/security.md#what-is-masked-and-where). The one place every writer uses:
 * the call record and the log. In an XML message masking follows the text's real structure, not a
 * pattern over it: whatever way the value is written (CDATA, entity references, split by comments,
 * any prefix), the whole content of the element goes. Other shapes — path parameters, queries,
 * forms, multipart, JSON — are masked whatever they look like and whether or not anything could
 * read them (mask-named-values.ts, mask-multipart.ts). Every pass is linear in the text.
 */

// --- a small XML tokenizer, only as precise as masking needs -------------------------------------

/** `other`: text, a comment, CDATA, a processing instruction, a declaration or a stray `<`. */
type Kind = 'start' | 'end' | 'other';

/**
 * The token markupAt read last. One object, rewritten by each call: a body is thousands of tokens,
 * and most are read, looked at and left (nothing allocated for them).
 */
const token = {
  kind: 'other' as Kind,
  /** Where the tag's qualified name, as written, starts and ends (start and end tags; else both `end`). */
  nameStart: 0,
  /** LONG_NAME: a start tag's long name whose end is not yet known (isSecretToken). */
  nameEnd: 0,
  /** A start tag's first quote or `>` after its name (the text's length if none). */
  nameBound: 0,
  /** One past the token's last character; the text's length when it is unterminated. */
  end: 0,
  /** False when the text ends before the token does. */
  complete: true,
  /** `<name …/>`. */
  selfClosing: false,
};
type Token = typeof token;

function setToken(
  kind: Kind,
  nameStart: number,
  nameEnd: number,
  end: number,
  complete: boolean,
  selfClosing = false,
): Token {
  token.kind = kind;
  token.nameStart = nameStart;
  token.nameEnd = nameEnd;
  token.end = end;
  token.complete = complete;
  token.selfClosing = selfClosing;
  return token;
}

const other = (end: number, complete: boolean) => setToken('other', end, end, end, complete);

/**
 * Whether a character can be part of an XML name. ASCII as XML 1.0's NameChar; other characters
 * are taken as name characters except the few Latin-1 ones NameChar leaves out. A name stops at
 * the first character that cannot be in it, so `<code\u0001>` is read as a `code` element: for
 * masking, reading too much as a secret element is the safe side.
 */
function isNameChar(c: number): boolean {
  if (c < 0x80) {
    return (
      (c >= 0x61 && c <= 0x7a) || // a-z
      (c >= 0x41 && c <= 0x5a) || // A-Z
      (c >= 0x30 && c <= 0x3a) || // 0-9 and ':'
      c === 0x2d || // -
      c === 0x2e || // .
      c === 0x5f // _
    );
  }
  return c === 0xb7 || (c >= 0xc0 && c !== 0xd7 && c !== 0xf7);
}

// A run of characters is read by a loop for its first few, then by a native search (indexOf, or a
// regular expression: faster a character than the loop), so that a name as long as the body
// allows stays cheap.
/** How many characters a loop looks at before it hands over to a native search. */
const LOOP = 32;
/** A character isNameChar refuses. */
const NOT_NAME_CHAR = /[^-.0-:A-Z_a-z\u00b7\u00c0-\u00d6\u00d8-\u00f6\u00f8-\uffff]/g;

/** The first match of `re` (global, one character long) at or after `from`, or the text's length. */
function search(re: RegExp, xml: string, from: number): number {
  if (from >= xml.length) return xml.length;
  re.lastIndex = from;
  return re.test(xml) ? re.lastIndex - 1 : xml.length;
}

function readName(xml: string, from: number): number {
  const limit = Math.min(xml.length, from + LOOP);
  for (let i = from; i < limit; i++) if (!isNameChar(xml.charCodeAt(i))) return i;
  return search(NOT_NAME_CHAR, xml, limit);
}

/** The first `"`, `'` or `>` at or after `from`, or the text's length. */
function quoteOrGt(xml: string, from: number): number {
  const n = xml.length;
  const limit = Math.min(n, from + LOOP);
  for (let i = from; i < limit; i++) {
    const c = xml.charCodeAt(i);
    if (c === 0x22 /* " */ || c === 0x27 /* ' */ || c === 0x3e /* > */) return i;
  }
  if (limit === n) return n;
  // Three searches for one character (each many times faster than one for any of three): the
  // quotes looked for only up to the `>`, so that none reads past it.
  const gt = xml.indexOf('>', limit);
  const before = gt === -1 ? xml.slice(limit) : xml.slice(limit, gt);
  const double = before.indexOf('"');
  const single = before.indexOf("'");
  if (double === -1 && single === -1) return gt === -1 ? n : gt;
  return limit + (double === -1 ? single : single === -1 ? double : Math.min(double, single));
}

/**
 * Quoted strings and what stands between them up to the next quote, up to 256 a call (each call's
 * backtracking memory bounded, whatever the text's length): where the last one closed.
 */
const QUOTED = /(?:[^"'>]*(?:"[^"]*"|'[^']*')){0,256}/y;

/** The next `<` at or after `from`, or -1: right there when tags follow one another. */
const nextLt = (xml: string, from: number): number =>
  xml.charCodeAt(from) === 0x3c /* < */ ? from : xml.indexOf('<', from);

/** Where `close` ends after `from`, or the text's end when it never comes. */
function until(xml: string, close: string, from: number): Token {
  const at = xml.indexOf(close, from);
  return at === -1 ? other(xml.length, false) : other(at + close.length, true);
}

/**
 * Reads the markup token starting at `lt` (where `xml[lt]` is `<`) into `token`, and answers it.
 * Attribute values are skipped as quoted strings, so a `>` inside one does not end the tag.
 */
function markupAt(xml: string, lt: number): Token {
  const n = xml.length;
  const next = xml.charCodeAt(lt + 1);
  if (next === 0x21 /* ! */) {
    if (xml.startsWith('<!--', lt)) return until(xml, '-->', lt + 4);
    if (xml.startsWith('<![CDATA[', lt)) return until(xml, ']]>', lt + 9);
    // A declaration (`<!DOCTYPE …>`, refused by the reader anyway): quotes and `[…]` skipped.
    let depth = 0;
    for (let i = lt + 2; i < n; i++) {
      const c = xml[i];
      if (c === '"' || c === "'") {
        const close = xml.indexOf(c, i + 1);
        if (close === -1) break;
        i = close;
      } else if (c === '[') depth++;
      else if (c === ']') depth--;
      else if (c === '>' && depth <= 0) return other(i + 1, true);
    }
    return other(n, false);
  }
  if (next === 0x3f /* ? */) return until(xml, '?>', lt + 2);
  if (next === 0x2f /* / */) {
    const nameEnd = readName(xml, lt + 2);
    const gt = xml.indexOf('>', nameEnd);
    return setToken('end', lt + 2, nameEnd, gt === -1 ? n : gt + 1, gt !== -1);
  }
  const nameEnd = shortNameEnd(xml, lt + 1);
  // `<` not followed by a name is not markup: a stray character of text.
  if (nameEnd === lt + 1) return other(lt + 1, true);
  // A long name's end is not needed to find the tag's: no quote or `>` is a name's character.
  let i = nameEnd === LONG_NAME ? lt + 1 + LOOP : nameEnd;
  let bound = -1;
  for (;;) {
    i = quoteOrGt(xml, i);
    if (bound === -1) bound = i;
    if (i >= n) break;
    if (xml.charCodeAt(i) === 0x3e /* > */) {
      const selfClosing = xml.charCodeAt(i - 1) === 0x2f; /* / */
      setToken('start', lt + 1, nameEnd, i + 1, true, selfClosing);
      token.nameBound = bound;
      return token;
    }
    // A quoted value, and the values after it, crossed by the regular expression (faster than a
    // loop on a tag of many attributes); no progress: the quote has no partner.
    QUOTED.lastIndex = i;
    QUOTED.test(xml);
    if (QUOTED.lastIndex === i) break;
    i = QUOTED.lastIndex;
  }
  setToken('start', lt + 1, nameEnd, n, false);
  token.nameBound = bound;
  return token;
}

/** A start tag's nameEnd when its name is longer than LOOP characters and its end not yet looked for. */
const LONG_NAME = -1;

/** Where the name at `from` ends, as readName says, or LONG_NAME past LOOP characters. */
function shortNameEnd(xml: string, from: number): number {
  const limit = Math.min(xml.length, from + LOOP);
  for (let i = from; i < limit; i++) if (!isNameChar(xml.charCodeAt(i))) return i;
  return limit === xml.length ? limit : LONG_NAME;
}

/**
 * Whether the tag markupAt read last is a secret's (isSecretName). A long start tag's name is read
 * to its end — a search as long as the name — only when it may be one: when a `:` stands before the
 * tag's first quote or `>` (a prefix, perhaps), or the name begins with a secret's.
 */
function isSecretToken(xml: string, secret: readonly string[], shortest: number): boolean {
  if (token.nameEnd === LONG_NAME) {
    const start = token.nameStart;
    const prefixed = xml.slice(start, token.nameBound).indexOf(':') !== -1;
    if (!prefixed && !secret.some((name) => name.length >= LOOP || beginsWith(xml, start, name)))
      return false;
    token.nameEnd = search(NOT_NAME_CHAR, xml, start + LOOP);
  }
  return (
    token.nameEnd - token.nameStart >= shortest && isSecretName(xml, token.nameStart, token.nameEnd, secret)
  );
}

/** Whether `xml` has `name` (lower-case) at `at`, in any case. */
function beginsWith(xml: string, at: number, name: string): boolean {
  for (let k = 0; k < name.length; k++)
    if (asciiLower(xml.charCodeAt(at + k)) !== name.charCodeAt(k)) return false;
  return true;
}

/**
 * Where the content of the element whose start tag ends at `from` ends: the index of its matching
 * end tag and where that end tag ends; undefined when the text ends first or the end tag does not
 * match (not well-formed).
 */
function contentEnd(xml: string, from: number, name: string): { at: number; after: number } | undefined {
  let depth = 1;
  let i = from;
  for (;;) {
    const lt = nextLt(xml, i);
    if (lt === -1) return undefined;
    markupAt(xml, lt);
    if (!token.complete) return undefined;
    if (token.kind === 'start' && !token.selfClosing) depth++;
    else if (token.kind === 'end' && --depth === 0) {
      const same = token.nameEnd - token.nameStart === name.length && xml.startsWith(name, token.nameStart);
      return same ? { at: lt, after: token.end } : undefined;
    }
    i = token.end;
  }
}

/**
 * Whether the qualified name `xml[start, end)` is a secret's, whatever its prefix and case: its
 * local part is one of `names`, or one of them followed by junk that no letter or digit begins
 * (`code-x`, `code.1`, `code\uFFFD` where a client's bytes were not UTF-8): a reader takes those
 * for other elements, but the person who wrote them meant the secret
 * (docs/security.md#what-is-masked-and-where).
 */
function isSecretName(xml: string, start: number, end: number, names: readonly string[]): boolean {
  // Compared in place, nothing allocated for a short name: most tags are not the secret's.
  const local = localStart(xml, start, end);
  for (const secret of names) {
    const after = local + secret.length;
    if (after > end || (after < end && isAsciiAlnum(xml, after))) continue;
    let k = 0;
    while (k < secret.length && asciiLower(xml.charCodeAt(local + k)) === secret.charCodeAt(k)) k++;
    if (k === secret.length) return true;
  }
  return false;
}

/** Where the local part of the name `xml[start, end)` starts: after its last `:`. */
function localStart(xml: string, start: number, end: number): number {
  if (end - start <= LOOP) {
    for (let i = end - 1; i >= start; i--) if (xml.charCodeAt(i) === 0x3a /* : */) return i + 1;
    return start;
  }
  // A long name: looked for in it alone, by indexOf first (native and fast; lastIndexOf goes a
  // character at a time, and only once a `:` is known to stop it inside the name).
  const name = xml.slice(start, end);
  return name.indexOf(':') === -1 ? start : start + name.lastIndexOf(':') + 1;
}

const asciiLower = (c: number): number => (c >= 0x41 && c <= 0x5a ? c | 0x20 : c);

function isAsciiAlnum(text: string, at: number): boolean {
  const c = text.charCodeAt(at);
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);
}

const lowered = new WeakMap<readonly string[], { secret: string[]; shortest: number }>();

/** The names lower-cased and distinct, and the shortest's length: once per list (the server's is a constant). */
function lowerNames(names: readonly string[]): { secret: string[]; shortest: number } {
  let entry = lowered.get(names);
  if (!entry) {
    const secret = [...new Set(names.map((n) => n.toLowerCase()))];
    entry = { secret, shortest: Math.min(...secret.map((n) => n.length)) };
    lowered.set(names, entry);
  }
  return entry;
}

/** Whitespace, `>` or `/`: what may follow an element's name in a tag as XML writes it. */
function endsName(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x3e || c === 0x2f;
}

/**
 * Masks the whole content of every element whose local name is one of `names` (any prefix, any
 * case, junk after the name; nested markup, CDATA, comments and references included) with `***`.
 * When the text ends before such an element does, or its end tag does not match, everything from
 * its start tag on is masked. Self-closing elements stay as they are. A tag with junk right after
 * the name (`<code?4821</code>`, a byte flipped) keeps its name and `>`, the rest masked, and is
 * taken for a start tag. An end tag with no start tag of its own (`<code/>4821</code>`) masks what
 * stands between it and the tag before. Then, as a safety net, any remaining occurrence of
 * `values` (what the reader actually read for the secret parameters) that stands as a whole token
 * is masked too (mask-values.ts). `found` collects the start of what was masked (see echoForms).
 */
export function maskXmlElements(
  xml: string,
  names: readonly string[],
  values: Iterable<string | undefined> = [],
  found?: string[],
): string {
  if (names.length === 0) return maskValues(xml, values);
  /** What is masked, its start (a parser's error may quote it: echoForms). */
  const masked = (from: number, to: number) => {
    if (found && found.length < FOUND_LIMIT && to > from)
      found.push(xml.slice(from, Math.min(to, from + 64)));
  };
  const { secret, shortest } = lowerNames(names);
  let out = '';
  let last = 0;
  let i = 0;
  // Where the last start or end tag ended: a stray end tag masks back to it.
  let tagEnd = 0;
  for (;;) {
    const lt = nextLt(xml, i);
    if (lt === -1) break;
    markupAt(xml, lt);
    i = token.end;
    if (token.kind === 'other') continue;
    if (!isSecretToken(xml, secret, shortest)) {
      tagEnd = token.end;
      continue;
    }
    if (token.kind === 'end') {
      const from = Math.max(last, tagEnd);
      if (lt > from) {
        masked(from, lt);
        out += xml.slice(last, from) + MASK;
        last = lt;
      }
      tagEnd = token.end;
      continue;
    }
    if (!token.complete) {
      // `<code …` and then the end of the text: keep the name, mask the rest.
      masked(token.nameEnd, xml.length);
      out += xml.slice(last, token.nameEnd) + MASK;
      last = xml.length;
      break;
    }
    const { nameStart, nameEnd, end } = token;
    const junk = !endsName(xml.charCodeAt(nameEnd));
    tagEnd = end;
    if (token.selfClosing && !junk) continue;
    out += junk ? `${xml.slice(last, nameEnd)}${MASK}>${MASK}` : xml.slice(last, end) + MASK;
    // contentEnd reads on with markupAt: what it needs of this token is taken first.
    const content = contentEnd(xml, end, xml.slice(nameStart, nameEnd));
    masked(junk ? nameEnd : end, content ? content.at : xml.length);
    if (!content) {
      last = xml.length;
      break;
    }
    last = content.at;
    i = tagEnd = content.after;
  }
  out += xml.slice(last);
  return maskValues(out, values);
}

// --- everything a request carries, and what an answer echoes of it ------------------------------

/**
 * Masks secrets in any text that came with a request and is not its body: its URL (path
 * parameters and query alike), a header's value, a parameter's value (mask-named-values.ts).
 */
export function maskRequestText(text: string, names: readonly string[], found?: string[]): string {
  return maskNamedValues(text, names, 'request', found);
}

/**
 * Masks secrets in a request body whatever it turns out to be, and whatever its Content-Type says:
 * the elements of an XML message (by its structure, above), the parts of a multipart body
 * (mask-multipart.ts), the value after every secret name in any other shape — a form, JSON,
 * text, a tag the XML pass cannot see (mask-named-values.ts) — and any remaining whole-token
 * occurrence of `values`, what a reader read for the secret parameters. `found` collects the
 * named values masked (see echoForms).
 */
export function maskRequestBody(
  text: string,
  names: readonly string[],
  values: Iterable<string | undefined> = [],
  found?: string[],
): string {
  if (text === '') return text;
  const structured = maskMultipartParts(maskXmlElements(text, names, [], found), names);
  return maskValues(maskNamedValues(structured, names, 'request', found), values);
}

/**
 * Masks secrets in what the server wrote about a request — an error text, an answer's body, a
 * note — which may echo part of it (an operation name from the path, a SOAPAction, a parameter's
 * value): values after a secret name and `=`, or a `:` with nothing between it and the name and
 * the value (the server's own texts say `Invalid code: it must be…`), and any whole-token
 * occurrence of `values` (what a reader read, and echoForms of what the request's masking found):
 * a phone holding the code's digits is echoed as it was sent.
 */
export function maskAnswerText(
  text: string,
  names: readonly string[],
  values: Iterable<string | undefined> = [],
): string {
  return maskValues(maskNamedValues(text, names, 'answer'), values);
}

/**
 * What the answer texts mask of what the request's masking `found`: each value as written, as a
 * path is decoded (an operation name echoed in an error: `AuthCode;code%2F=4821` comes back as
 * `AuthCode;code/=4821`, another shape), as a query or a form is (`+` a space), and each run of 4
 * letters or digits or more in them — a code is letters and digits, and comes back whole whatever
 * the echo escapes around it (`&quot;`, a parser's quotes); not the secret names themselves.
 * Distinct, 4 characters or more (maskValues ignores shorter ones).
 */
export function echoForms(found: Iterable<string>, names: readonly string[]): string[] {
  const forms = new Set<string>();
  const { secret } = lowerNames(names);
  const add = (form: string) => {
    forms.add(form);
    // Letters and digits only, as a code is: its own only run.
    if (/^[A-Za-z0-9]*$/.test(form)) return;
    for (const run of form.match(/[A-Za-z0-9]{4,}/g) ?? [])
      if (!secret.includes(run.toLowerCase())) forms.add(run);
  };
  for (const value of found) {
    add(value);
    if (!value.includes('%') && !value.includes('+')) continue;
    try {
      add(decodeURIComponent(value));
    } catch {
      // A malformed escape: as a path it would not have been routed.
    }
    add(new URLSearchParams(`v=${value}`).get('v') ?? value);
  }
  return [...forms].filter((form) => form.length >= 4);
}
