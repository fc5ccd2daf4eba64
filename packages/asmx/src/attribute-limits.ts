/**
 * Counts attributes in the raw text, in a linear pass (two for some odd markup, below), before
 * either reader sees it (read-soap.ts), and says where a limit is passed: a tag with more than
 * `perElement` (namespace declarations are attributes too), or more than `perMessage` in all.
 *
 * Why: fast-xml-parser's validator and parser do work for each attribute (a name check, an object
 * key, entity decoding), so a body well under the size limit made of attributes held the event
 * loop for a long time (docs/performance.md#what-was-tried). ASMX clients send a handful.
 *
 * The count must hold whichever way a reader delimits markup. Start tags, comments and
 * `<![CDATA[…]]>` are delimited alike by the validator and the parser: a `>` or a quote inside a
 * quoted value does not end a tag, comments and CDATA end at their first `-->` / `]]>`. They part
 * ways on processing instructions (the parser skips quoted values up to the `?>`, the validator
 * stops at the first `?>`), on end tags with quotes in them (the parser stops at the first `>`) and
 * on other `<!` markup (text to the validator; to the parser a CDATA section when `<![`, else a
 * start tag) — and the parser reads attributes in processing instructions and in `<!x …>`, the
 * validator in `</x a="1"/>`. So the text is read as the parser reads it, and, when it holds
 * markup the two read differently, once more as the validator reads it. Attributes are counted as
 * the parser splits them (a name, then `="…"` or `='…'` if it closes within the tag), which is
 * also an upper bound on what the validator checks before it stops at a malformed attribute.
 *
 * Cost: a start tag of the common shape (plainTag) is delimited and counted in one pass, and long
 * runs (a long name, a stretch of whitespace) are crossed by a native search, not a character at
 * a time: forty bodies at the size cap of many attributes on each element, or of one long name,
 * at once held /healthz up before (docs/performance.md, `bench/hostile-requests.mjs`).
 */
export type AttributeBreach =
  /** A tag with too many; `index` is where its `<` is. */
  | { readonly kind: 'element' | 'processing instruction'; readonly index: number }
  /** Too many in all. */
  | { readonly kind: 'message' };

export function attributeBreach(
  xml: string,
  perElement: number,
  perMessage: number,
): AttributeBreach | undefined {
  const asParsed = scan(xml, perElement, perMessage, false);
  if (asParsed.breach || !asParsed.readersDiffer) return asParsed.breach;
  return scan(xml, perElement, perMessage, true).breach;
}

const LT = 0x3c;
const GT = 0x3e;
const BANG = 0x21;
const QUESTION = 0x3f;
const SLASH = 0x2f;
const EQUALS = 0x3d;
const DOUBLE_QUOTE = 0x22;
const SINGLE_QUOTE = 0x27;

/**
 * One reading of `xml`: the parser's (`asValidator` false) or the validator's. `readersDiffer`:
 * the text holds markup the other reader delimits differently (only the parser's reading says).
 */
function scan(
  xml: string,
  perElement: number,
  perMessage: number,
  asValidator: boolean,
): { breach: AttributeBreach | undefined; readersDiffer: boolean } {
  const n = xml.length;
  let readersDiffer = false;
  let total = 0;
  /** Whether a start or end tag came before (the validator reads `<?` differently after one). */
  let afterTag = false;
  const done = (breach?: AttributeBreach) => ({ breach, readersDiffer });
  /** Counts the attributes of the tag at `lt`, its text `xml[from, to)`; the breach, if any. */
  const count = (lt: number, from: number, to: number, kind: 'element' | 'processing instruction') => {
    const attributes = countAttributes(xml, from, to, perElement);
    if (attributes > perElement) return { kind, index: lt };
    total += attributes;
    return total > perMessage ? { kind: 'message' as const } : undefined;
  };
  for (let i = 0; ; ) {
    // Tags one after another: no call to look for the next.
    const lt = xml.charCodeAt(i) === LT ? i : xml.indexOf('<', i);
    if (lt === -1) return done();
    const next = xml.charCodeAt(lt + 1);
    if (next === BANG) {
      // An unterminated comment or CDATA section runs to the end for both readers.
      if (xml.startsWith('<!--', lt)) {
        const end = xml.indexOf('-->', lt + 4);
        if (end === -1) return done();
        i = end + 3;
        continue;
      }
      if (xml.startsWith('<![CDATA[', lt)) {
        const end = xml.indexOf(']]>', lt + 9);
        if (end === -1) return done();
        i = end + 3;
        continue;
      }
      if (asValidator) {
        // Text to the validator, which reads on from the character after `<!`.
        i = lt + 2;
        continue;
      }
      readersDiffer = true;
      if (xml.charCodeAt(lt + 2) === 0x5b /* [ */) {
        const end = xml.indexOf(']]>', lt);
        if (end === -1) return done();
        i = end + 3;
        continue;
      }
      // Otherwise the parser reads `<!x …>` as a start tag: below.
    } else if (next === QUESTION) {
      if (asValidator) {
        // Its first `?>`, looked for after `<?` before the first tag, and from the `?` after it
        // (so `<?>` is a whole one there).
        const end = xml.indexOf('?>', afterTag ? lt + 1 : lt + 2);
        if (end === -1) return done();
        i = end + 2;
        continue;
      }
      const end = tagEnd(xml, lt + 1, true);
      if (end === lt + 1 || end !== xml.indexOf('?>', lt + 2)) readersDiffer = true;
      if (end === -1) return done();
      const breach = count(lt, lt + 1, end, 'processing instruction');
      if (breach) return done(breach);
      i = end + 2;
      continue;
    } else if (next === SLASH) {
      if (!asValidator) {
        // The parser ends an end tag at its first `>` and reads no attributes in it. The validator
        // skips quoted values to find the `>`, and checks the attributes of `</x a="1"/>` as if it
        // were an empty-element tag: with a quote in it, the two may read on differently.
        const end = xml.indexOf('>', lt + 2);
        if (hasQuote(xml, lt + 2, end === -1 ? n : end)) readersDiffer = true;
        if (end === -1) return done();
        i = end + 1;
        continue;
      }
      afterTag = true;
      const end = tagEnd(xml, lt + 2, false);
      const stop = end === -1 ? n : end;
      if (xml.charCodeAt(stop - 1) === SLASH) {
        const breach = count(lt, lt + 2, stop - 1, 'element');
        if (breach) return done(breach);
      }
      if (end === -1) return done();
      i = end + 1;
      continue;
    }
    afterTag = true;
    const plainEnd = plainTag(xml, lt + 1, perElement);
    if (plainEnd !== -1 || plainAttributes > perElement) {
      // Read in one pass (plainTag); the same count as below.
      if (plainAttributes > perElement) return done({ kind: 'element', index: lt });
      total += plainAttributes;
      if (total > perMessage) return done({ kind: 'message' });
      i = plainEnd + 1;
      continue;
    }
    const end = tagEnd(xml, lt + 1, false);
    // No `>` outside quotes: the parser stops, but the validator checks the attributes up to the
    // end of the text (when its quotes are balanced) before it says the tag is not closed.
    const stop = end === -1 ? n : xml.charCodeAt(end - 1) === SLASH ? end - 1 : end;
    const breach = count(lt, lt + 1, stop, 'element');
    if (breach || end === -1) return done(breach);
    i = end + 1;
  }
}

function hasQuote(xml: string, from: number, to: number): boolean {
  for (let k = from; k < to; k++) {
    const c = xml.charCodeAt(k);
    if (c === DOUBLE_QUOTE || c === SINGLE_QUOTE) return true;
  }
  return false;
}

/**
 * Where the tag whose text starts at `from` ends: its `>` (or, for a processing instruction, the
 * `?` of its `?>`) outside quoted strings; -1 when there is none. A quote anywhere in the tag
 * opens a string up to the next of the same quote, as both readers read it.
 */
function tagEnd(xml: string, from: number, instruction: boolean): number {
  const n = xml.length;
  for (let k = from; k < n; k++) {
    const c = xml.charCodeAt(k);
    if (c === DOUBLE_QUOTE || c === SINGLE_QUOTE) {
      k = xml.indexOf(xml[k] as string, k + 1);
      if (k === -1) return -1;
    } else if (instruction ? c === QUESTION && xml.charCodeAt(k + 1) === GT : c === GT) {
      return k;
    }
  }
  return -1;
}

/**
 * The attributes in the tag text `xml[from, to)`, as fast-xml-parser splits them: after the tag's
 * name (up to the first whitespace), each name is a run of characters other than whitespace and
 * `=`, followed by `="…"` or `='…'` when that value closes within the tag. Stops counting past `max`.
 */
function countAttributes(xml: string, from: number, to: number, max: number): number {
  let k = spaceFrom(xml, from, to);
  let count = 0;
  let lastDouble: number | undefined;
  let lastSingle: number | undefined;
  while (k < to) {
    const c = xml.charCodeAt(k);
    if (isSpace(c) || c === EQUALS) {
      k = separatorsEnd(xml, k + 1, to);
      continue;
    }
    if (++count > max) return count;
    k = nameEnd(xml, k + 1, to, false);
    let j = spacesEnd(xml, k, to);
    if (j >= to || xml.charCodeAt(j) !== EQUALS) continue;
    j = spacesEnd(xml, j + 1, to);
    const quote = xml.charCodeAt(j);
    if (j >= to || (quote !== DOUBLE_QUOTE && quote !== SINGLE_QUOTE)) continue;
    // Its partner within the tag, if any; the last quote of each kind in the tag, looked for once,
    // keeps every search inside it. A quote without one becomes part of the next name, and no
    // later quote of its kind is left to search from: linear.
    let last: number;
    if (quote === DOUBLE_QUOTE) {
      lastDouble ??= xml.lastIndexOf('"', to - 1);
      last = lastDouble;
    } else {
      lastSingle ??= xml.lastIndexOf("'", to - 1);
      last = lastSingle;
    }
    if (last > j) k = xml.indexOf(quote === DOUBLE_QUOTE ? '"' : "'", j + 1) + 1;
  }
  return count;
}

/** The attributes of the last tag plainTag read (up to one past its `max`). */
let plainAttributes = 0;

/**
 * The common start tag in one pass: where `<`'s tag, whose text starts at `from`, ends (its `>`),
 * with plainAttributes set to what tagEnd and countAttributes would say, when the tag is plain —
 * every quote in it opens a value right after a name and `=` (whitespace allowed around the `=`)
 * and is closed. There the readers, tagEnd and countAttributes all read the same attributes.
 * Otherwise -1, and the tag is read by those two; plainAttributes then says how many it counted
 * before it stopped, which those would count too (more than `max`: the breach, known already).
 */
function plainTag(xml: string, from: number, max: number): number {
  const n = xml.length;
  plainAttributes = 0;
  // The tag's name, up to the first whitespace (the parser's split); `=` may be part of it.
  let k = tagNameEnd(xml, from, n);
  let count = 0;
  let runs = true;
  while (k < n) {
    if (runs && count >= RUN_AFTER) {
      // Many attributes: the next RUN of the common form, `name="…"`, crossed at once.
      RUN.lastIndex = k;
      if (RUN.test(xml)) {
        count += RUN_LENGTH;
        plainAttributes = count;
        if (count > max) return -1;
        k = RUN.lastIndex;
        continue;
      }
      // Fewer left, or another form: the loop for the rest of the tag (a run tried once more for
      // each attribute would read the rest again each time).
      runs = false;
    }
    let kind = kindOf(xml.charCodeAt(k));
    if (kind === TAG_END) return k;
    if (kind === QUOTE) return -1;
    if (kind === SEPARATOR) {
      k = separatorsEnd(xml, k + 1, n);
      continue;
    }
    // A name: up to whitespace, `=`, a quote or the tag's end.
    const start = k;
    const limit = Math.min(n, k + LOOP);
    while (++k < limit) {
      kind = kindOf(xml.charCodeAt(k));
      if (kind !== NAME) break;
    }
    if (k === limit) {
      k = search(NAME_END_IN_TAG, xml, k, n);
      if (k >= n) return -1;
      kind = kindOf(xml.charCodeAt(k));
    }
    if (kind === QUOTE) return -1;
    if (kind === TAG_END) {
      // A lone `/` before the `>` closes the element (`<x a="1"/>`): not an attribute.
      if (k - start > 1 || xml.charCodeAt(start) !== SLASH) plainAttributes = ++count;
      return k;
    }
    plainAttributes = ++count;
    if (count > max) return -1;
    // `=` and a quoted value, perhaps: `a="1"`, `a = '1'`.
    let c = xml.charCodeAt(k);
    if (c !== EQUALS) {
      k = spacesEnd(xml, k + 1, n);
      c = xml.charCodeAt(k);
      if (c !== EQUALS) continue;
    }
    c = xml.charCodeAt(++k);
    if (c !== DOUBLE_QUOTE && c !== SINGLE_QUOTE) {
      k = spacesEnd(xml, k, n);
      c = xml.charCodeAt(k);
      if (c !== DOUBLE_QUOTE && c !== SINGLE_QUOTE) continue;
    }
    const close = partner(xml, k + 1, c);
    if (close === -1) return -1;
    k = close + 1;
  }
  return -1;
}

/**
 * RUN_LENGTH attributes in a row as plainTag reads them, each with a quoted value: separators, a
 * name, `=` (whitespace around it), the value up to its partner. A regular expression crosses them
 * faster than the loop; tried once a tag has RUN_AFTER attributes, so that a tag
 * of a few is read by the loop alone.
 */
const RUN_LENGTH = 32;
const RUN_AFTER = 8;
const RUN = new RegExp(`(?:[\\s=]*[^\\s="'>]+\\s*=\\s*(?:"[^"]*"|'[^']*')){${RUN_LENGTH}}`, 'y');

/** What a character is to plainTag. */
const NAME = 0;
const SEPARATOR = 1;
const QUOTE = 2;
const TAG_END = 3;
/** The kinds of the ASCII characters; others are whitespace or a name's. */
const ASCII_KINDS = new Uint8Array(128);
for (const c of [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, EQUALS]) ASCII_KINDS[c] = SEPARATOR;
ASCII_KINDS[DOUBLE_QUOTE] = QUOTE;
ASCII_KINDS[SINGLE_QUOTE] = QUOTE;
ASCII_KINDS[GT] = TAG_END;

const kindOf = (c: number): number => (c < 0x80 ? (ASCII_KINDS[c] as number) : isSpace(c) ? SEPARATOR : NAME);

// Runs of one kind of character: a loop over the first few, a native search over the rest of a
// long one (a regular expression, or indexOf of each character that can end it: faster a character
// than the loop), so that a name as long as the body allows stays cheap. Each looks in `[from, to)`
// and says `to` when the run reaches it.

/** How many characters a loop looks at before it hands over to a native search. */
const LOOP = 32;
const NOT_SPACE = /\S/g;
const NAME_END_IN_TAG = /[\s="'>]/g;
const NAME_END = /[\s=]/g;
const NOT_SEPARATOR = /[^\s=]/g;

/** The first whitespace. */
function spaceFrom(xml: string, from: number, to: number): number {
  const limit = Math.min(to, from + LOOP);
  for (let k = from; k < limit; k++) if (isSpace(xml.charCodeAt(k))) return k;
  return limit >= to ? to : firstOf(xml, limit, to, SPACES);
}

/** The first character that is not whitespace. */
function spacesEnd(xml: string, from: number, to: number): number {
  const limit = Math.min(to, from + LOOP);
  for (let k = from; k < limit; k++) if (!isSpace(xml.charCodeAt(k))) return k;
  return search(NOT_SPACE, xml, limit, to);
}

/** The end of a tag's name, in a tag not yet delimited: whitespace, a quote or `>`. */
function tagNameEnd(xml: string, from: number, to: number): number {
  const limit = Math.min(to, from + LOOP);
  for (let k = from; k < limit; k++) {
    const c = xml.charCodeAt(k);
    if (c === GT || c === DOUBLE_QUOTE || c === SINGLE_QUOTE || isSpace(c)) return k;
  }
  if (limit >= to) return to;
  // A long name (a hostile body is one): the characters that end it are few, and indexOf finds
  // each many times faster than an expression finds any of them — up to the tag's `>`, so that no
  // search reads past the tag.
  const gt = xml.indexOf('>', limit);
  return firstOf(xml, limit, gt === -1 || gt > to ? to : gt, TAG_NAME_STOPS);
}

/** JavaScript's whitespace (`\s`, isSpace), one string a character. */
const SPACES = [
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
  0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
].map((c) => String.fromCharCode(c));
const TAG_NAME_STOPS = ['"', "'", ...SPACES];

/** The first of `chars` (one character each) in `[from, to)`, or `to`. */
function firstOf(xml: string, from: number, to: number, chars: readonly string[]): number {
  // One search a character, each only up to the first found so far.
  let text = xml.slice(from, to);
  let first = to;
  for (const c of chars) {
    const at = text.indexOf(c);
    if (at !== -1) {
      first = from + at;
      text = text.slice(0, at);
    }
  }
  return first;
}

/**
 * The end of an attribute's name: whitespace or `=`, and, in a tag not yet delimited (`inTag`), a
 * quote or `>`.
 */
function nameEnd(xml: string, from: number, to: number, inTag: boolean): number {
  const limit = Math.min(to, from + LOOP);
  for (let k = from; k < limit; k++) {
    const c = xml.charCodeAt(k);
    if (isSpace(c) || c === EQUALS || (inTag && (c === GT || c === DOUBLE_QUOTE || c === SINGLE_QUOTE)))
      return k;
  }
  return search(inTag ? NAME_END_IN_TAG : NAME_END, xml, limit, to);
}

/** The first character that is neither whitespace nor `=`. */
function separatorsEnd(xml: string, from: number, to: number): number {
  const limit = Math.min(to, from + LOOP);
  for (let k = from; k < limit; k++) {
    const c = xml.charCodeAt(k);
    if (c !== EQUALS && !isSpace(c)) return k;
  }
  return search(NOT_SEPARATOR, xml, limit, to);
}

/** The first `quote` (a character code) at or after `from`, or -1: a short value is looked at in place. */
function partner(xml: string, from: number, quote: number): number {
  const limit = Math.min(xml.length, from + LOOP);
  for (let k = from; k < limit; k++) if (xml.charCodeAt(k) === quote) return k;
  return limit < xml.length ? xml.indexOf(quote === DOUBLE_QUOTE ? '"' : "'", limit) : -1;
}

/**
 * The first match of `re` (global, one character long) in `[from, to)`, or `to`. Before `to` the
 * text is cut there (a view of it, not a copy), so no search reads past the tag it is in.
 */
function search(re: RegExp, xml: string, from: number, to: number): number {
  if (from >= to) return to;
  re.lastIndex = from;
  return re.test(to < xml.length ? xml.slice(0, to) : xml) ? re.lastIndex - 1 : to;
}

/** JavaScript's `\s`, which the parser splits on. */
function isSpace(c: number): boolean {
  // Most characters are printable ASCII: two comparisons.
  if (c > 0x20 && c < 0xa0) return false;
  return (
    c === 0x20 ||
    (c >= 0x09 && c <= 0x0d) ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}
