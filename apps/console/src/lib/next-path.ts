/**
 * Where to go after logging in: the `next` of /login?next=…, accepted only as a path of this
 * console (one leading "/", no scheme, no host), so a link cannot send a person who logs in to
 * another site. Anything else, and the login and setup pages themselves, give null.
 */
export function safeNextPath(next: string | null | undefined): string | null {
  if (!next?.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return null;
  // Browsers drop tabs and line breaks from URLs ("/\t/evil.example" is "//evil.example").
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(next)) return null;
  const base = 'http://console.invalid';
  let url: URL;
  try {
    url = new URL(next, base);
  } catch {
    return null;
  }
  if (url.origin !== base) return null;
  if (url.pathname === '/login' || url.pathname === '/setup') return null;
  return `${url.pathname}${url.search}${url.hash}`;
}
