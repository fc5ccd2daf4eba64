export interface ContentType {
  /** Lower-cased `type/subtype`, or '' when the header is absent or empty. */
  readonly mediaType: string;
  /** Parameters with lower-cased names and unquoted values. */
  readonly params: ReadonlyMap<string, string>;
}

/**
 * Parses a Content-Type header leniently (RFC 9110 §8.3): parameters are `name=value` or
 * `name="value"`, separated by semicolons. Used for `charset` and the SOAP 1.2 `action`.
 */
export function parseContentType(header: string | undefined): ContentType {
  const params = new Map<string, string>();
  if (!header) return { mediaType: '', params };
  const semi = header.indexOf(';');
  const mediaType = (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
  if (semi !== -1) {
    const re = /;\s*([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
    for (const m of header.slice(semi).matchAll(re)) {
      const name = (m[1] ?? '').toLowerCase();
      const value = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? '').trim();
      if (!params.has(name)) params.set(name, value);
    }
  }
  return { mediaType, params };
}
