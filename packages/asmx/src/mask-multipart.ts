import { MASK } from '@school/contract';
import { NameFinder } from './secret-names.js';

/**
 * Masks the content of every multipart part one of whose header lines names a secret as a word
 * (`Content-Disposition: form-data; name="code"`, `name=CODE`, `name*=UTF-8''%63ode`,
 * `filename="code.txt"`, any quoting, any case). Nothing reads multipart here; a client that sent
 * one still sent the code. The boundary is not taken from a Content-Type (which may be absent or
 * wrong): a part starts at any line beginning with `--`, its headers run to the first blank line,
 * and its content to the next line that repeats that delimiter (CRLF or LF alone). A part whose
 * headers never end is masked from the line naming the secret on; one whose delimiter never
 * comes again, to the end. One pass, linear in the text.
 */
export function maskMultipartParts(text: string, names: readonly string[]): string {
  if (names.length === 0 || !text.includes('--')) return text;
  const finder = new NameFinder(text, names);
  const n = text.length;
  let out = '';
  let last = 0;
  let i = 0;
  while (i < n) {
    const lineEnd = endOfLine(text, i);
    if (text.charCodeAt(i) !== 0x2d || text.charCodeAt(i + 1) !== 0x2d) {
      i = lineEnd + 1;
      continue;
    }
    const delimiter = text.slice(i, trimmedEnd(text, i, lineEnd));
    // The part's header lines, up to the blank line.
    let secretLineEnd = -1;
    let contentStart = -1;
    for (let h = lineEnd + 1; h < n; ) {
      const headerEnd = endOfLine(text, h);
      if (trimmedEnd(text, h, headerEnd) === h) {
        contentStart = Math.min(headerEnd + 1, n);
        break;
      }
      if (secretLineEnd === -1 && finder.find(h, headerEnd) !== -1) secretLineEnd = headerEnd;
      h = headerEnd + 1;
    }
    if (secretLineEnd === -1) {
      // Not a secret part: its content is read on as lines (it may hold parts of its own).
      i = contentStart === -1 ? n : contentStart;
      continue;
    }
    const start = contentStart === -1 ? Math.min(secretLineEnd + 1, n) : contentStart;
    // From the blank line's own LF: an empty content is followed by the delimiter at once.
    const next = contentStart === -1 ? -1 : text.indexOf(`\n${delimiter}`, start - 1);
    let end = next === -1 ? n : next;
    if (end > start && text.charCodeAt(end - 1) === 0x0d) end--;
    if (end > start) {
      out += text.slice(last, start) + MASK;
      last = end;
    }
    if (next === -1) break;
    i = next + 1;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** The index of the LF ending the line that starts at `from`, or the text's length. */
function endOfLine(text: string, from: number): number {
  const lf = text.indexOf('\n', from);
  return lf === -1 ? text.length : lf;
}

/** Where the line `[from, to)` ends without its trailing whitespace (CR included). */
function trimmedEnd(text: string, from: number, to: number): number {
  let end = to;
  while (end > from) {
    const c = text.charCodeAt(end - 1);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) break;
    end--;
  }
  return end;
}
