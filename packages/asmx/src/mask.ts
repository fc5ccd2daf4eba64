import { MASK } from '@school/contract';

/**
 * Masks the values of secret parameters (auth codes) in a raw request before it is stored or
 * logged: the text of SOAP elements with those local names, and those fields of a query string
 * or form body.
 */

const elementPatterns = new Map<string, RegExp>();

export function maskXmlElements(xml: string, names: readonly string[]): string {
  let out = xml;
  for (const name of names) {
    let re = elementPatterns.get(name);
    if (!re) {
      re = new RegExp(`(<(?:[\\w.-]+:)?${name}(?:\\s[^>]*)?>)([^<]*)(?=</)`, 'g');
      elementPatterns.set(name, re);
    }
    out = out.replace(re, `$1${MASK}`);
  }
  return out;
}

/** Masks fields of `a=1&b=2` (names case-insensitive, as the HTTP bindings read them). */
export function maskFormFields(form: string, names: readonly string[]): string {
  if (names.length === 0 || form === '') return form;
  const secret = new Set(names.map((n) => n.toLowerCase()));
  return form
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq === -1 ? pair : pair.slice(0, eq);
      let name: string;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        name = rawName;
      }
      return secret.has(name.toLowerCase()) ? `${rawName}=${MASK}` : pair;
    })
    .join('&');
}

/** Masks secret fields in the query string of a URL (path and query), for records and logs. */
export function maskQuery(url: string, names: readonly string[]): string {
  const q = url.indexOf('?');
  return q === -1 || names.length === 0
    ? url
    : `${url.slice(0, q + 1)}${maskFormFields(url.slice(q + 1), names)}`;
}
