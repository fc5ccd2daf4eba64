const XML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for XML or HTML content and attribute values (either quote style). */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => XML_ESCAPES[ch] ?? ch);
}

const TEXT_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/**
 * Escapes element text the way .NET's XmlWriter did: only `&`, `<` and `>`; quotes stay as they
 * are, so fault texts match ASMX's bytes (asmx-compat.md §3).
 */
export function escapeXmlText(text: string): string {
  return text.replace(/[&<>]/g, (ch) => TEXT_ESCAPES[ch] ?? ch);
}
