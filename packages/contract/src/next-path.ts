/**
 * Where to go after logging in: the `next` of /login?next=…, resolved as a URL against the
 * console's own origin and accepted only when it stays a path of that origin, so a link cannot
 * send a person who logs in to another site. Dot segments are resolved first: `/.//evil.example`
 * resolves to the path `//evil.example`, which a browser reads as another host, so it is refused
 * like `//evil.example` itself. Anything else, and the login and setup pages themselves, give null
 * (the caller then goes to its default page). Shared by the console's login page and the server's
 * single sign-on, which sends the browser back to it.
 */
export function safeNextPath(next: string | null | undefined, origin: string): string | null {
  if (!next?.startsWith('/')) return null;
  // Browsers drop tabs and line breaks from URLs ("/\t/evil.example" is "//evil.example").
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(next)) return null;
  const path = resolvedPath(next, origin);
  if (path === null) return null;
  // What is navigated to is the resolved path: it must itself resolve to the same place.
  if (resolvedPath(path, origin) !== path) return null;
  const pathname = new URL(path, origin).pathname;
  if (pathname === '/login' || pathname === '/setup') return null;
  return path;
}

/** `next` resolved against `origin`, as path, query and fragment; null when it leaves the origin. */
function resolvedPath(next: string, origin: string): string | null {
  let url: URL;
  try {
    url = new URL(next, origin);
  } catch {
    return null;
  }
  if (url.origin !== origin) return null;
  // A path starting with two slashes (or a backslash after one) names a host when used as a link.
  if (url.pathname.startsWith('//') || url.pathname.startsWith('/\\')) return null;
  return `${url.pathname}${url.search}${url.hash}`;
}
