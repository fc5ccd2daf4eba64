/**
 * Counts attributes in the raw text, in a linear pass (two for some odd markup, below), before
 * either reader sees it (read-soap.ts), and says where a limit is passed: a tag with more than
 * `perElement` (namespace declarations are attributes too), or more than `perMessage` in all.
 *
 * Why: fast-xml-parser's validator and parser spend microseconds on each attribute (a name check,
 * an object key, entity decoding): 88 000 attributes on one element took the general reader
 * 1.6 s, and 256 on each of 600 elements half a second, both well under the body limit. ASMX
 * clients send a handful.
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
    const lt = xml.indexOf('<', i);
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
  let k = from;
  while (k < to && !isSpace(xml.charCodeAt(k))) k++;
  let count = 0;
  let lastDouble: number | undefined;
  let lastSingle: number | undefined;
  while (k < to) {
    const c = xml.charCodeAt(k);
    if (isSpace(c) || c === EQUALS) {
      k++;
      continue;
    }
    if (++count > max) return count;
    while (k < to && !isSpace(xml.charCodeAt(k)) && xml.charCodeAt(k) !== EQUALS) k++;
    let j = k;
    while (j < to && isSpace(xml.charCodeAt(j))) j++;
    if (j >= to || xml.charCodeAt(j) !== EQUALS) continue;
    j++;
    while (j < to && isSpace(xml.charCodeAt(j))) j++;
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

/** JavaScript's `\s`, which the parser splits on. */
function isSpace(c: number): boolean {
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
