import { type Element, elementView, ROOT_SCOPE, type Scope, scopeOf } from './xml-view.js';

/**
 * The common shape of a SOAP request read in one pass, without the validator's and the parser's
 * two passes and the parser's object tree: elements holding either elements or text, attributes
 * in quotes. What it reads is read exactly as the general reader reads it (the same `Element`
 * view, namespaces, attributes and text); anything else — a comment, CDATA, a processing
 * instruction, an entity or character reference, a carriage return or control character, a name
 * outside ASCII, text beside elements, anything malformed — makes it answer undefined, and the
 * general reader (validator, then parser) reads the message and words any error. It only ever
 * accepts well-formed XML, so it never accepts what the general reader would refuse.
 *
 * Why: reading the envelope was a large part of the server's CPU under SOAP load, most of it the
 * validator's and the parser's passes over messages of this shape (docs/performance.md).
 */
export function scanEnvelope(xml: string, maxDepth: number): Element | undefined {
  const n = xml.length;
  let i = 0;
  if (xml.startsWith('<?xml', 0)) {
    DECLARATION.lastIndex = 0;
    if (!DECLARATION.test(xml)) return undefined;
    i = DECLARATION.lastIndex;
  }
  let elements = 0;

  const skipSpace = (): void => {
    while (i < n) {
      const c = xml.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a) i++;
      else break;
    }
  };

  /** The element starting at `i` ('<' then a name), with everything inside it; undefined: not ours. */
  function readElement(parentScope: Scope, depth: number): Element | undefined {
    // Below the parser's own depth limit, whichever way it counts.
    if (depth >= maxDepth || ++elements > MAX_ELEMENTS) return undefined;
    NAME.lastIndex = i + 1;
    const name = NAME.exec(xml)?.[0];
    if (name === undefined || reserved(name)) return undefined;
    i = NAME.lastIndex;
    const attrs: [string, string][] = [];
    // Names seen, for the duplicate check: a Set, as searching `attrs` for each name is quadratic.
    let names: Set<string> | undefined;
    let empty = false;
    for (;;) {
      const before = i;
      skipSpace();
      const c = xml.charCodeAt(i);
      if (c === 0x3e) {
        i++;
        break;
      }
      if (c === 0x2f) {
        if (xml.charCodeAt(i + 1) !== 0x3e) return undefined;
        i += 2;
        empty = true;
        break;
      }
      // An attribute: after whitespace, never twice.
      if (i === before) return undefined;
      ATTRIBUTE.lastIndex = i;
      const m = ATTRIBUTE.exec(xml);
      if (!m) return undefined;
      const attrName = m[1] as string;
      if (reserved(attrName)) return undefined;
      names ??= new Set();
      if (names.has(attrName)) return undefined;
      names.add(attrName);
      attrs.push([attrName, m[2] ?? m[3] ?? '']);
      i = ATTRIBUTE.lastIndex;
    }
    const scope = scopeOf(attrs, parentScope);
    const kids: Element[] = [];
    let text = '';
    /** Whether the text is whitespace only, run by run (whitespace is plain text: one look each). */
    let spaceOnly = true;
    if (!empty) {
      // Text up to the next '<': all of it, if the element holds no element; else whitespace only.
      for (;;) {
        const lt = xml.indexOf('<', i);
        if (lt === -1) return undefined;
        const run = xml.slice(i, lt);
        if (run !== '') {
          if (!isSpace(run)) {
            if (!plainText(run)) return undefined;
            spaceOnly = false;
          }
          text += run;
        }
        i = lt;
        const next = xml.charCodeAt(i + 1);
        if (next === 0x2f) break;
        if (next === 0x21 || next === 0x3f) return undefined; // comment, CDATA, PI
        const kid = readElement(scope, depth + 1);
        if (!kid) return undefined;
        kids.push(kid);
      }
      // The end tag: `</name>`, with optional whitespace before '>'.
      if (!xml.startsWith(name, i + 2)) return undefined;
      i += 2 + name.length;
      skipSpace();
      if (xml.charCodeAt(i) !== 0x3e) return undefined;
      i++;
      // Mixed content (text that is not whitespace, beside elements): the general reader's.
      if (kids.length > 0 && !spaceOnly) return undefined;
    }
    return elementView(
      name,
      attrs,
      scope,
      () => kids[Symbol.iterator](),
      () => text,
    );
  }

  skipSpace();
  if (xml.charCodeAt(i) !== 0x3c) return undefined;
  const root = readElement(ROOT_SCOPE, 1);
  if (!root) return undefined;
  skipSpace();
  return i === n ? root : undefined;
}

/** Far more than any request of this shape holds; the general reader counts against the limit. */
const MAX_ELEMENTS = 64;

/** An XML declaration as clients write it: version 1.0, perhaps an encoding and standalone. */
const DECLARATION =
  /<\?xml[ \t\n]+version[ \t\n]*=[ \t\n]*(?:"1\.0"|'1\.0')(?:[ \t\n]+encoding[ \t\n]*=[ \t\n]*(?:"[A-Za-z][A-Za-z0-9._-]*"|'[A-Za-z][A-Za-z0-9._-]*'))?(?:[ \t\n]+standalone[ \t\n]*=[ \t\n]*(?:"(?:yes|no)"|'(?:yes|no)'))?[ \t\n]*\?>/y;
/** A name, perhaps prefixed, in ASCII. */
const NAME = /[A-Za-z_][A-Za-z0-9_.-]*(?::[A-Za-z_][A-Za-z0-9_.-]*)?/y;
/** `name="value"` or `name='value'`; a value with '<', '>', '&' or whitespace to normalise is not ours. */
const ATTRIBUTE =
  /([A-Za-z_][A-Za-z0-9_.-]*(?::[A-Za-z_][A-Za-z0-9_.-]*)?)[ \t\n]*=[ \t\n]*(?:"([^"<>&\t\n\r]*)"|'([^'<>&\t\n\r]*)')/y;
/** The parser refuses these as names (read-soap.ts renames them): the general reader's. */
const RESERVED = /(^|:)(__proto__|constructor|prototype)$/;
const reserved = (name: string): boolean =>
  // The ends looked at first: the expression would try each character of a long name.
  (name.endsWith('__proto__') || name.endsWith('constructor') || name.endsWith('prototype')) &&
  RESERVED.test(name);

/**
 * A long text is looked at by a regular expression (native, faster a character than a loop), so
 * that an envelope padded with whitespace up to the body cap stays cheap.
 */
const LONG = 32;
/** What plainText refuses besides '&': a control character other than tab and LF (CR included), U+FFFE, U+FFFF. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\ufffe\uffff]/;
const NOT_SPACE = /[^ \t\n]/;

/** Text with nothing to decode or normalise: no '&', no CR, no control character, no `]]>`. */
function plainText(run: string): boolean {
  if (run.length > LONG) return !run.includes('&') && !CONTROL.test(run) && !run.includes(']]>');
  for (let k = 0; k < run.length; k++) {
    const c = run.charCodeAt(k);
    if (c === 0x26 || (c < 0x20 && c !== 0x09 && c !== 0x0a) || c === 0xfffe || c === 0xffff) return false;
  }
  return !run.includes(']]>');
}

function isSpace(text: string): boolean {
  if (text.length > LONG) return !NOT_SPACE.test(text);
  for (let k = 0; k < text.length; k++) {
    const c = text.charCodeAt(k);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a) return false;
  }
  return true;
}
