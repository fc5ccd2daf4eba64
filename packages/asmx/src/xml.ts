/**
 * Characters XML 1.0 does not allow anywhere in a document (its `Char` production): C0 controls
 * other than TAB, LF and CR; U+FFFE and U+FFFF; surrogates not part of a pair. Text echoed from a
 * request may hold them; written as they are, they would make the answer not well-formed.
 */
const NOT_XML_CHAR =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose.
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const NOT_XML_CHAR_G = new RegExp(NOT_XML_CHAR.source, 'g');

/** What a character XML 1.0 does not allow is written as: U+FFFD, the replacement character. */
export const XML_REPLACEMENT = '\ufffd';

/** The index of the first character XML 1.0 does not allow in `text`, or -1 when there is none. */
export function findNonXmlChar(text: string): number {
  return text.search(NOT_XML_CHAR);
}

/** `text` with every character XML 1.0 does not allow replaced by U+FFFD. */
export function toXmlChars(text: string): string {
  return text.replace(NOT_XML_CHAR_G, XML_REPLACEMENT);
}

const XML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

// One pass: the five escapes, and U+FFFD for what XML 1.0 does not allow.
const ESCAPE = new RegExp(`[&<>"']|${NOT_XML_CHAR.source}`, 'g');
const ESCAPE_TEXT = new RegExp(`[&<>]|${NOT_XML_CHAR.source}`, 'g');

/**
 * Escapes text for XML or HTML content and attribute values (either quote style). Characters XML
 * 1.0 does not allow become U+FFFD, so the result is always well-formed.
 */
export function escapeXml(text: string): string {
  return text.replace(ESCAPE, (ch) => XML_ESCAPES[ch] ?? XML_REPLACEMENT);
}

/**
 * Escapes element text the way .NET's XmlWriter did: only `&`, `<` and `>`; quotes stay as they
 * are, so fault texts match ASMX's bytes (docs/faults.md#fault-envelopes). Characters XML 1.0 does not allow
 * become U+FFFD (XmlWriter threw on them instead, which cost the caller the fault).
 */
export function escapeXmlText(text: string): string {
  return text.replace(ESCAPE_TEXT, (ch) => XML_ESCAPES[ch] ?? XML_REPLACEMENT);
}
