/**
 * Finding a secret parameter's name as the wire may spell it (docs/security.md#what-is-masked-and-where):
 * in any case, with any of its characters percent-encoded (`%63ode`, `C%4FDE`), as a word of its
 * own — not inside a longer name (`codes`, `barcode`, `%41code`), where an escape counts as the
 * character it stands for.
 */

/** What finding a list of names takes, made once per list (the server's is a constant). */
interface Compiled {
  /** Shared by the finders of the list: each sets its `lastIndex` before each search. */
  readonly pattern: RegExp;
  /**
   * Each name's characters, lower-cased, when none has a digit: then where a match starts can be
   * read backwards from where it ends (a letter and an escape never end alike; a digit and the
   * escape of it do), and a search allocates nothing. Else undefined: the pattern's exec says.
   */
  readonly backwards: readonly (readonly number[])[] | undefined;
}

const compiledLists = new WeakMap<readonly string[], Compiled>();

function compile(names: readonly string[]): Compiled {
  let compiled = compiledLists.get(names);
  if (!compiled) {
    // Longest first: a name that begins another must not hide it.
    const sorted = [...new Set(names.map((n) => n.toLowerCase()))].sort((a, b) => b.length - a.length);
    compiled = {
      pattern: new RegExp(sorted.map((name) => [...name].map(charPattern).join('')).join('|'), 'gi'),
      backwards: sorted.some((name) => /[0-9]/.test(name))
        ? undefined
        : sorted.map((name) => [...name].map((ch) => ch.charCodeAt(0))),
    };
    compiledLists.set(names, compiled);
  }
  return compiled;
}

/**
 * Finds secret names in one text, as spelled above, with a global, case-insensitive pattern of
 * fixed-length alternatives and no quantifiers: a search is linear in the text. Searches come with
 * growing `from`: the next name found is kept, so that searches bounded by `to` (one header line at
 * a time) do not each read on to the end of the text. One text at a time: the pattern is shared.
 */
export class NameFinder {
  private readonly pattern: RegExp;
  private readonly backwards: readonly (readonly number[])[] | undefined;
  /** The last search: from where, and what it found (its start, -1 for none; its end). */
  private searchedFrom = -1;
  private foundAt = -1;
  private foundEnd = 0;
  /** Where the last name found ends. */
  end = 0;

  constructor(
    private readonly text: string,
    names: readonly string[],
  ) {
    ({ pattern: this.pattern, backwards: this.backwards } = compile(names));
  }

  /**
   * Where the next name as a word (wordCharBefore, wordCharAt) starts in `[from, to)`, -1 when
   * there is none; `end` then says where it ends.
   */
  find(from: number, to = this.text.length): number {
    const known =
      this.searchedFrom !== -1 && this.searchedFrom <= from && (this.foundAt === -1 || this.foundAt >= from);
    if (!known) {
      this.searchedFrom = from;
      this.foundAt = -1;
      this.pattern.lastIndex = from;
      // Names inside other words (`AuthCode`, most of a request's) are passed here at once. Two
      // occurrences of a name of letters and digits cannot overlap and both be words.
      for (;;) {
        const start = this.next(from);
        if (start === -1) break;
        if (!wordCharBefore(this.text, start) && !wordCharAt(this.text, this.pattern.lastIndex)) {
          this.foundAt = start;
          this.foundEnd = this.pattern.lastIndex;
          break;
        }
      }
    }
    if (this.foundAt === -1 || this.foundAt >= to) return -1;
    this.end = this.foundEnd;
    return this.foundAt;
  }

  /** The next match's start from the pattern's `lastIndex` on (not before `from`), or -1; `lastIndex` is then its end. */
  private next(from: number): number {
    if (!this.backwards) {
      const m = this.pattern.exec(this.text);
      return m ? m.index : -1;
    }
    if (!this.pattern.test(this.text)) return -1;
    const end = this.pattern.lastIndex;
    // The leftmost start any name reads back to: the pattern's own.
    let start = -1;
    for (const name of this.backwards) {
      const at = startOf(this.text, end, name);
      if (at >= from && (start === -1 || at < start)) start = at;
    }
    return start;
  }
}

/** Where `name` (lower-cased character codes, no digit) starts if it ends at `end`, or -1. */
function startOf(text: string, end: number, name: readonly number[]): number {
  let j = end;
  for (let k = name.length - 1; k >= 0; k--) {
    const want = name[k] as number;
    if (j >= 1 && asciiLower(text.charCodeAt(j - 1)) === want) j--;
    else if (j >= 3 && want < 0x80 && asciiLower(escapeAt(text, j - 3)) === want) j -= 3;
    else return -1;
  }
  return j;
}

const asciiLower = (c: number): number => (c >= 0x41 && c <= 0x5a ? c | 0x20 : c);

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
function wordCharAt(text: string, at: number): boolean {
  const c = text.charCodeAt(at);
  if (c !== 0x25) return isAlnum(c);
  const escaped = escapeAt(text, at);
  return escaped >= 0 && isAlnum(escaped);
}

/** Whether the character that ends just before `at` (an escape read as its character) is one. */
function wordCharBefore(text: string, at: number): boolean {
  if (at >= 3) {
    const escaped = escapeAt(text, at - 3);
    if (escaped >= 0) return isAlnum(escaped);
  }
  return at > 0 && isAlnum(text.charCodeAt(at - 1));
}
