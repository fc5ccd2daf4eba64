/**
 * The fuzzer's raw material (fuzz.test.ts): byte sequences and characters that make trouble, fuzz
 * text, byte-level mutations, percent-encoding. Shared with masking-shapes.test.ts, which makes
 * the same shapes carry auth codes.
 */
import fc from 'fast-check';

export const bytesOf = (text: string) => [...Buffer.from(text, 'utf8')];

const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0));

/** Byte sequences that make trouble: controls, U+FFFE/FFFF, encoded surrogates, broken UTF-8, markup. */
export const NASTY_BYTES: number[][] = [
  [0x00],
  [0x01],
  [0x08],
  [0x0b],
  [0x0c],
  [0x1b],
  [0x1f],
  [0x7f],
  [0xef, 0xbf, 0xbe], // U+FFFE
  [0xef, 0xbf, 0xbf], // U+FFFF
  [0xed, 0xa0, 0x80], // a surrogate, encoded: not UTF-8
  [0xff],
  [0xc0, 0x80],
  [0xc2, 0x85], // U+0085
  [0xf4, 0x90, 0x80, 0x80],
  ascii('&#1;'),
  ascii('&#0;'),
  ascii('&#xFFFE;'),
  ascii('&#xD800;'),
  ascii('&#x1F;'),
  ascii('&bogus;'),
  ascii('<'),
  ascii('>'),
  ascii('&'),
  ascii(']]>'),
  ascii('<!--'),
  ascii('<![CDATA['),
  ascii('"'),
  ascii(' xmlns:x="'),
  ascii('<!DOCTYPE x>'),
  ascii('</'),
  ascii('/>'),
];

export const bytesArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_BYTES) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 4 }) },
);

/** Characters that make trouble in a JS string: controls, U+FFFE/FFFF, lone surrogates, markup. */
export const nastyChar = fc.oneof(
  fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
  fc.constantFrom(
    '\ufffe',
    '\uffff',
    '\ufffd',
    '\ud800',
    '\udfff',
    '\u0085',
    '\u2028',
    '<',
    '&',
    '"',
    ']]>',
    '%',
  ),
);
export const fuzzText = fc.string({
  unit: fc.oneof(
    { weight: 2, arbitrary: nastyChar },
    { weight: 3, arbitrary: fc.constantFrom(...'abcXYZ0129 +-_.:/=&?#') },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) },
  ),
  maxLength: 16,
});

export type Mutation =
  | { kind: 'flip'; at: number; byte: number }
  | { kind: 'insert'; at: number; bytes: number[] }
  | { kind: 'in-name'; nth: number; offset: number; bytes: number[] }
  | { kind: 'in-text'; nth: number; bytes: number[] }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'truncate'; at: number };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip'), at: fc.nat(), byte: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('insert'), at: fc.nat(), bytes: bytesArb }),
  fc.record({
    kind: fc.constant('in-name'),
    nth: fc.nat(),
    offset: fc.integer({ min: 1, max: 6 }),
    bytes: bytesArb,
  }),
  fc.record({ kind: fc.constant('in-text'), nth: fc.nat(), bytes: bytesArb }),
  fc.record({ kind: fc.constant('delete'), at: fc.nat(), length: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('truncate'), at: fc.nat() }),
) as fc.Arbitrary<Mutation>;

/** The positions just after each occurrence of `byte`. */
function after(bytes: number[], byte: number): number[] {
  const out: number[] = [];
  bytes.forEach((b, i) => {
    if (b === byte) out.push(i + 1);
  });
  return out;
}

export function mutate(input: number[], mutations: readonly Mutation[]): number[] {
  let bytes = input;
  for (const m of mutations) {
    const n = bytes.length;
    switch (m.kind) {
      case 'flip':
        if (n > 0) bytes = bytes.map((b, i) => (i === m.at % n ? b ^ m.byte : b));
        break;
      case 'insert': {
        const at = m.at % (n + 1);
        bytes = [...bytes.slice(0, at), ...m.bytes, ...bytes.slice(at)];
        break;
      }
      case 'in-name':
      case 'in-text': {
        const places = after(bytes, m.kind === 'in-name' ? 0x3c : 0x3e);
        if (places.length === 0) break;
        const at = Math.min(n, (places[m.nth % places.length] ?? 0) + (m.kind === 'in-name' ? m.offset : 0));
        bytes = [...bytes.slice(0, at), ...m.bytes, ...bytes.slice(at)];
        break;
      }
      case 'delete': {
        const at = m.at % (n + 1);
        bytes = [...bytes.slice(0, at), ...bytes.slice(at + m.length)];
        break;
      }
      case 'truncate':
        bytes = bytes.slice(0, m.at % (n + 1));
        break;
    }
  }
  return bytes;
}

/** A string with one of the nasty characters somewhere in it. */
export const spoil = (text: string) =>
  fc.tuple(fc.nat(), fc.array(nastyChar, { minLength: 1, maxLength: 3 })).map(([at, chars]) => {
    const i = at % (text.length + 1);
    return text.slice(0, i) + chars.join('') + text.slice(i);
  });

/** Percent-encodes bytes, sometimes leaving printable ASCII as it is (`&`, `=`, `+`, `%` too). */
export const encodeArb = (bytes: number[]) =>
  fc
    .boolean()
    .map((raw) =>
      bytes
        .map((b) =>
          raw && b > 0x20 && b < 0x7f && b !== 0x23
            ? String.fromCharCode(b)
            : /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b))
              ? String.fromCharCode(b)
              : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
        )
        .join(''),
    );

/** A name or value of a query string or form, as bytes: fuzz text, maybe with broken UTF-8. */
export const fieldBytesArb = fc
  .tuple(fuzzText, fc.array(fc.tuple(fc.nat(), bytesArb), { maxLength: 2 }))
  .map(([text, inserts]) => {
    let bytes = bytesOf(text);
    for (const [at, extra] of inserts) {
      const i = at % (bytes.length + 1);
      bytes = [...bytes.slice(0, i), ...extra, ...bytes.slice(i)];
    }
    return bytes;
  });

/** A form's Content-Type, mostly right: sometimes missing, plain text, with a charset, empty or spoiled. */
export const formContentTypeArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/x-www-form-urlencoded') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      undefined,
      'text/plain',
      'application/x-www-form-urlencoded; charset=utf-8',
      '',
    ),
  },
  { weight: 1, arbitrary: spoil('application/x-www-form-urlencoded') },
);
