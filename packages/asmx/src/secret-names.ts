/**
 * Finding a secret parameter's name as the wire may spell it (docs/security.md#what-is-masked-and-where):
 * in any case, with any of its characters percent-encoded (`%63ode`, `C%4FDE`), as a word of its
 * own — not inside a longer name (`codes`, `barcode`, `%41code`), where an escape counts as the
 * character it stands for.
 */

const sources = new Map<string, string>();

/**
 * A global, case-insensitive pattern matching any of `names` spelled as above. Only alternatives
 * of fixed length, no quantifiers: a search is linear in the text. A new RegExp per call (V8 caches
 * the compiled code), so callers may move its `lastIndex` freely.
 */
export function secretNamePattern(names: readonly string[]): RegExp {
  const key = names.join('\n');
  let source = sources.get(key);
  if (source === undefined) {
    // Longest first: a name that begins another must not hide it.
    const sorted = [...new Set(names.map((n) => n.toLowerCase()))].sort((a, b) => b.length - a.length);
    source = sorted.map((name) => [...name].map(charPattern).join('')).join('|');
    sources.set(key, source);
  }
  return new RegExp(source, 'gi');
}

/**
 * One character of a name: itself in either case (the flag), or (ASCII) the `%XX` escape of either
 * case, hex digits in either case (the flag again).
 */
function charPattern(ch: string): string {
  const literal = ch.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
  if (ch.charCodeAt(0) >= 0x80) return literal;
  const escapes = new Set(
    [ch.toLowerCase(), ch.toUpperCase()].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`),
  );
  return `(?:${literal}|${[...escapes].join('|')})`;
}

const isAlnum = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/** The byte a `%XX` escape at `at` stands for, or -1 when there is none. */
export function escapeAt(text: string, at: number): number {
  if (text.charCodeAt(at) !== 0x25) return -1;
  const hi = hexValue(text.charCodeAt(at + 1));
  const lo = hexValue(text.charCodeAt(at + 2));
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/** Whether the character at `at` (an escape read as its character) is an ASCII letter or digit. */
export function wordCharAt(text: string, at: number): boolean {
  const c = text.charCodeAt(at);
  if (c !== 0x25) return isAlnum(c);
  const escaped = escapeAt(text, at);
  return escaped >= 0 && isAlnum(escaped);
}

/** Whether the character that ends just before `at` (an escape read as its character) is one. */
export function wordCharBefore(text: string, at: number): boolean {
  if (at >= 3) {
    const escaped = escapeAt(text, at - 3);
    if (escaped >= 0) return isAlnum(escaped);
  }
  return at > 0 && isAlnum(text.charCodeAt(at - 1));
}

/** Whether `text` holds one of the names (the pattern's) as a word. */
export function mentionsName(text: string, pattern: RegExp): boolean {
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    if (!wordCharBefore(text, m.index) && !wordCharAt(text, m.index + m[0].length)) return true;
  }
  return false;
}
