import { MASK } from '@school/contract';

/**
 * The safety net over values (docs/security.md#what-is-masked-and-where): what a reader read for
 * a secret parameter, and what the answer texts may echo of it (echoForms), masked where each
 * stands as a whole token. A code is letters and digits: inside a longer run of them
 * (`+447400104821` holding `4821`, a class id, a URL's other field) it is some other value, and
 * masking it there would damage the data the record keeps. A value's end that is not a letter or
 * digit (an echo form `x="=Lk4821`) needs no boundary there.
 *
 * Values shorter than 4 characters are left alone: too likely to be anything else.
 */
export function maskValues(text: string, values: Iterable<string | undefined>): string {
  let out = text;
  for (const value of values) {
    if (value === undefined) continue;
    out = maskToken(out, value);
    const trimmed = value.trim();
    if (trimmed !== value) out = maskToken(out, trimmed);
  }
  return out;
}

/** Every whole-token occurrence of `value` in `text`, leftmost first, as the mask. */
function maskToken(text: string, value: string): string {
  const m = value.length;
  if (m < 4) return text;
  // Most texts do not hold the value at all: one native search, nothing made.
  let at = text.indexOf(value);
  if (at === -1) return text;
  // A value that overlaps itself (`ab-ab`) may stand whole where an occurrence it overlaps does
  // not; only then are all occurrences needed.
  if (!isAlnumOnly(value) && overlapsItself(value)) return maskOverlapping(text, value);
  // Otherwise occurrences do not overlap, or (letters and digits only) any that overlap lie in one
  // run longer than the value, none of them whole: the search goes on past each, as split does,
  // and what stands between those masked is joined by the mask.
  const kept: string[] = [];
  let last = 0;
  for (; at !== -1; at = text.indexOf(value, at + m)) {
    if (!isToken(text, at, value)) continue;
    kept.push(text.slice(last, at));
    last = at + m;
  }
  if (kept.length === 0) return text;
  kept.push(text.slice(last));
  return kept.join(MASK);
}

/**
 * The same for a value that overlaps itself, with every occurrence found in one pass
 * (Knuth–Morris–Pratt): restarting a search one past each occurrence that is not whole would be
 * quadratic on a text repeating the value.
 */
function maskOverlapping(text: string, value: string): string {
  const m = value.length;
  const fail = failure(value);
  const kept: string[] = [];
  let last = 0;
  let k = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    while (k > 0 && value.charCodeAt(k) !== c) k = fail[k - 1] as number;
    if (value.charCodeAt(k) === c) k++;
    if (k < m) continue;
    const at = i + 1 - m;
    if (at >= last && isToken(text, at, value)) {
      kept.push(text.slice(last, at));
      last = at + m;
    }
    k = fail[m - 1] as number;
  }
  if (kept.length === 0) return text;
  kept.push(text.slice(last));
  return kept.join(MASK);
}

/** Whether no letter or digit stands against an end of the occurrence at `at` that is one itself. */
function isToken(text: string, at: number, value: string): boolean {
  const end = at + value.length;
  if (at > 0 && isAlnum(value.charCodeAt(0)) && isAlnum(text.charCodeAt(at - 1))) return false;
  if (end === text.length) return true;
  return !(isAlnum(value.charCodeAt(value.length - 1)) && isAlnum(text.charCodeAt(end)));
}

/** KMP's table: for each prefix of `value`, its longest proper prefix that is also its suffix. */
function failure(value: string): Int32Array {
  const fail = new Int32Array(value.length);
  let k = 0;
  for (let i = 1; i < value.length; i++) {
    const c = value.charCodeAt(i);
    while (k > 0 && value.charCodeAt(k) !== c) k = fail[k - 1] as number;
    if (value.charCodeAt(k) === c) k++;
    fail[i] = k;
  }
  return fail;
}

/** Whether a proper prefix of `value` is also its suffix: two occurrences of it may overlap. */
function overlapsItself(value: string): boolean {
  // Most values do not repeat their first character: no table needed.
  if (value.indexOf(value.charAt(0), 1) === -1) return false;
  return (failure(value)[value.length - 1] as number) > 0;
}

function isAlnumOnly(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (!isAlnum(value.charCodeAt(i))) return false;
  return true;
}

/** An ASCII letter or digit. */
function isAlnum(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);
}
