import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { httpParamReader } from '../src/index.js';

describe('httpParamReader (the HTTP GET and POST bindings, asmx-compat.md §4)', () => {
  it('matches parameter names in any case, both as sent and as asked for', () => {
    const read = httpParamReader([
      ['Code', '4821'],
      ['PHONE', '+447911123456'],
    ]);
    expect(read('code')).toBe('4821');
    expect(read('CODE')).toBe('4821');
    expect(read('phone')).toBe('+447911123456');
    expect(read('Phone')).toBe('+447911123456');
  });

  it('takes the first occurrence of a repeated name, whatever its case', () => {
    const read = httpParamReader([
      ['code', 'first'],
      ['CODE', 'second'],
      ['Code', 'third'],
    ]);
    expect(read('code')).toBe('first');
  });

  it('reads an empty value as a value, and an absent parameter as undefined', () => {
    const read = httpParamReader([['code', '']]);
    expect(read('code')).toBe('');
    expect(read('phone')).toBeUndefined();
  });

  it('ignores extra parameters', () => {
    const read = httpParamReader([
      ['utm_source', 'mail'],
      ['code', '1'],
      ['phone', '2'],
    ]);
    expect(read('code')).toBe('1');
    expect(read('phone')).toBe('2');
  });

  it('reads URLSearchParams (a query string or a form body), decoded', () => {
    const read = httpParamReader(new URLSearchParams('Phone=%2B44%207911%20123456&code=12&code=34&x='));
    expect(read('phone')).toBe('+44 7911 123456');
    expect(read('code')).toBe('12');
    expect(read('x')).toBe('');
  });

  it('reads its entries once: a one-shot iterable is enough, and later changes do not matter', () => {
    function* entries(): Generator<[string, string]> {
      yield ['code', '1'];
    }
    const source: [string, string][] = [['phone', 'before']];
    const read = httpParamReader(entries());
    const snapshot = httpParamReader(source);
    source[0] = ['phone', 'after'];
    source.push(['code', 'late']);
    expect(read('code')).toBe('1');
    expect(snapshot('phone')).toBe('before');
    expect(snapshot('code')).toBeUndefined();
  });

  it('answers, for any entries, the value of the first entry whose name matches ignoring case', () => {
    const name = fc.constantFrom('code', 'Code', 'CODE', 'phone', 'PHONE', 'id', 'Id', 'id_class', 'x');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(name, fc.string({ maxLength: 4 })), { maxLength: 12 }),
        name,
        (entries, asked) => {
          const first = entries.find(([n]) => n.toLowerCase() === asked.toLowerCase());
          expect(httpParamReader(entries)(asked)).toBe(first?.[1]);
        },
      ),
      { seed: 42, numRuns: 500 },
    );
  });
});
