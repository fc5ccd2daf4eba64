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

interface Token {
  readonly kind: Kind;
  /** Where the tag's name ends (start and end tags). */
  readonly nameEnd: number;
  /** The qualified name as written (start and end tags), else ''. */
  readonly name: string;
  /** One past the token's last character; the text's length when it is unterminated. */
  readonly end: number;
  /** False when the text ends before the token does. */
  readonly complete: boolean;
  /** `<name …/>`. */
  readonly selfClosing: boolean;
}

const other = (end: number, complete: boolean): Token => ({
  kind: 'other',
  nameEnd: end,
  name: '',
  end,
  complete,
  selfClosing: false,
});

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

function readName(xml: string, from: number): number {
  let i = from;
  while (i < xml.length && isNameChar(xml.charCodeAt(i))) i++;
  return i;
}

/** Where `close` ends after `from`, or the text's end when it never comes. */
function until(xml: string, close: string, from: number): Token {
  const at = xml.indexOf(close, from);
  return at === -1 ? other(xml.length, false) : other(at + close.length, true);
}

/**
 * The markup token starting at `lt` (where `xml[lt]` is `<`). Attribute values are skipped as
 * quoted strings, so a `>` inside one does not end the tag.
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
    return {
      kind: 'end',
      nameEnd,
      name: xml.slice(lt + 2, nameEnd),
      end: gt === -1 ? n : gt + 1,
      complete: gt !== -1,
      selfClosing: false,
    };
  }
  const nameEnd = readName(xml, lt + 1);
  // `<` not followed by a name is not markup: a stray character of text.
  if (nameEnd === lt + 1) return other(lt + 1, true);
  const name = xml.slice(lt + 1, nameEnd);
  for (let i = nameEnd; i < n; i++) {
    const c = xml.charCodeAt(i);
    if (c === 0x22 /* " */ || c === 0x27 /* ' */) {
      const close = xml.indexOf(c === 0x22 ? '"' : "'", i + 1);
      if (close === -1) break;
      i = close;
    } else if (c === 0x3e /* > */) {
      const selfClosing = xml.charCodeAt(i - 1) === 0x2f; /* / */
      return { kind: 'start', nameEnd, name, end: i + 1, complete: true, selfClosing };
    }
  }
  return { kind: 'start', nameEnd, name, end: n, complete: false, selfClosing: false };
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
    const lt = xml.indexOf('<', i);
    if (lt === -1) return undefined;
    const token = markupAt(xml, lt);
    if (!token.complete) return undefined;
    if (token.kind === 'start' && !token.selfClosing) depth++;
    else if (token.kind === 'end' && --depth === 0) {
      return token.name === name ? { at: lt, after: token.end } : undefined;
    }
    i = token.end;
  }
}

/**
 * Whether a qualified name is a secret's, whatever its prefix and case: its local part is one of
 * `names`, or one of them followed by junk that no letter or digit begins (`code-x`, `code.1`,
 * `code\uFFFD` where a client's bytes were not UTF-8): a reader takes those for other elements,
 * but the person who wrote them meant the secret (docs/security.md#what-is-masked-and-where).
 */
function isSecretName(name: string, names: readonly string[]): boolean {
  // Compared in place, nothing allocated: most tags are not the secret's.
  const local = name.lastIndexOf(':') + 1;
  for (const secret of names) {
    const end = local + secret.length;
    if (end > name.length || (end < name.length && isAsciiAlnum(name, end))) continue;
    let k = 0;
    while (k < secret.length && asciiLower(name.charCodeAt(local + k)) === secret.charCodeAt(k)) k++;
    if (k === secret.length) return true;
  }
  return false;
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
    const lt = xml.indexOf('<', i);
    if (lt === -1) break;
    const token = markupAt(xml, lt);
    i = token.end;
    if (token.kind === 'other') continue;
    if (token.name.length < shortest || !isSecretName(token.name, secret)) {
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
    const junk = !endsName(xml.charCodeAt(token.nameEnd));
    tagEnd = token.end;
    if (token.selfClosing && !junk) continue;
    out += junk ? `${xml.slice(last, token.nameEnd)}${MASK}>${MASK}` : xml.slice(last, token.end) + MASK;
    const content = contentEnd(xml, token.end, token.name);
    masked(junk ? token.nameEnd : token.end, content ? content.at : xml.length);
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
