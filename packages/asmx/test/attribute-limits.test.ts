import { findGroup, type GroupDef } from '@school/contract';
import { describe, expect, it } from 'vitest';
import { attributeBreach } from '../src/attribute-limits.js';
import { DEFAULT_SOAP_LIMITS, readSoapRequest, type SoapRequest } from '../src/read-soap.js';

const PER_ELEMENT = DEFAULT_SOAP_LIMITS.maxAttributesPerElement;
const PER_MESSAGE = DEFAULT_SOAP_LIMITS.maxAttributes;
const NS = 'http://tempuri.org/';
const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const group = findGroup('AuthCodeSending') as GroupDef;

/** ` a0="v" a1="v" …`: `count` distinct attributes, each with `value`. */
const attrs = (count: number, value = '1', quote = '"') =>
  Array.from({ length: count }, (_, i) => ` a${i}=${quote}${value}${quote}`).join('');
const breach = (xml: string) => attributeBreach(xml, PER_ELEMENT, PER_MESSAGE);

describe('attributeBreach: the cap per element', () => {
  it('takes the cap and refuses one more, saying where the tag starts', () => {
    expect(breach(`<r><x${attrs(PER_ELEMENT)}/></r>`)).toBeUndefined();
    expect(breach(`<r><x${attrs(PER_ELEMENT + 1)}/></r>`)).toEqual({ kind: 'element', index: 3 });
    expect(breach(`<r>\n  <x${attrs(PER_ELEMENT + 1)}>t</x></r>`)).toEqual({ kind: 'element', index: 6 });
  });

  it('counts namespace declarations as attributes', () => {
    const declarations = (count: number) =>
      Array.from({ length: count }, (_, i) => ` xmlns:p${i}="urn:${i}"`).join('');
    expect(breach(`<x${declarations(PER_ELEMENT - 1)} xmlns="urn:d"/>`)).toBeUndefined();
    expect(breach(`<x${declarations(PER_ELEMENT)} xmlns="urn:d"/>`)).toEqual({ kind: 'element', index: 0 });
    expect(breach(`<x${declarations(PER_ELEMENT)}${attrs(1)}/>`)).toEqual({ kind: 'element', index: 0 });
  });

  it('is not fooled by `>`, `=`, `/` or the other quote inside a quoted value', () => {
    for (const value of ['>', 'a=b', '/>', "'>'", '"="', ' > = / ', '<']) {
      for (const quote of ['"', "'"]) {
        if (value.includes(quote)) continue;
        const under = `<r><x${attrs(PER_ELEMENT, value, quote)}/></r>`;
        const over = `<r><x${attrs(PER_ELEMENT + 1, value, quote)}/></r>`;
        expect(breach(under), `${quote}${value}${quote}`).toBeUndefined();
        expect(breach(over), `${quote}${value}${quote}`).toEqual({ kind: 'element', index: 3 });
      }
    }
    // A `>` in a value does not end the tag early and hide the attributes after it.
    expect(breach(`<x a=">"${attrs(PER_ELEMENT)}/>`)).toEqual({ kind: 'element', index: 0 });
    // Whitespace around `=` and between attributes, as XML allows it.
    const spaced = Array.from({ length: PER_ELEMENT + 1 }, (_, i) => `\n\ta${i} = '1'`).join('');
    expect(breach(`<x${spaced}\n/>`)).toEqual({ kind: 'element', index: 0 });
  });

  it('skips comments and CDATA sections, even when they hold `>`, quotes and `=`', () => {
    const crowded = `<x${attrs(PER_ELEMENT + 1)}/>`;
    expect(breach(`<r><!-- ${crowded} > " ' = --></r>`)).toBeUndefined();
    expect(breach(`<r><!-- a > b --><y${attrs(PER_ELEMENT + 1)}/></r>`)).toEqual({
      kind: 'element',
      index: 17,
    });
    expect(breach(`<r><![CDATA[ ${crowded} > " ' = ]]></r>`)).toBeUndefined();
    expect(breach(`<r><![CDATA[ " ]]><y${attrs(PER_ELEMENT + 1)}/></r>`)).toEqual({
      kind: 'element',
      index: 18,
    });
    // Unterminated: the rest of the text is inside it for both readers.
    expect(breach(`<r><!-- ${crowded}`)).toBeUndefined();
  });

  it('counts attributes in processing instructions, which the parser reads', () => {
    expect(breach(`<?xml version="1.0" encoding="utf-8"?><r/>`)).toBeUndefined();
    expect(breach(`<r><?pi${attrs(PER_ELEMENT)}?></r>`)).toBeUndefined();
    expect(breach(`<r><?pi${attrs(PER_ELEMENT + 1)}?></r>`)).toEqual({
      kind: 'processing instruction',
      index: 3,
    });
    // Bare words are split into attributes by the parser too.
    expect(breach(`<r><?pi${' w'.repeat(PER_ELEMENT + 1)}?></r>`)).toMatchObject({
      kind: 'processing instruction',
    });
    // A `?>` inside a quoted value: the validator stops there and reads the tag after it.
    expect(breach(`<r><?pi q="?><y${attrs(PER_ELEMENT + 1, '1', "'")}/>"?></r>`)).toEqual({
      kind: 'element',
      index: 13,
    });
  });

  it('counts attributes in other `<!` markup, and what the validator reads as tags in it', () => {
    // The parser reads `<!x …>` as a start tag.
    expect(breach(`<r><!x${attrs(PER_ELEMENT + 1)}/></r>`)).toEqual({ kind: 'element', index: 3 });
    // To the validator it is text, and the `<y` in its value a start tag.
    expect(breach(`<r><!x q="<y${attrs(PER_ELEMENT + 1, '1', "'")}/>"/></r>`)).toEqual({
      kind: 'element',
      index: 10,
    });
    // The parser takes `<![x … ]]>` for CDATA; the validator reads the tags in it.
    expect(breach(`<r><![x <y${attrs(PER_ELEMENT + 1)}/> ]]></r>`)).toEqual({ kind: 'element', index: 8 });
  });

  it('counts the attributes the validator checks in `</x …/>`', () => {
    expect(breach(`<r></r ${attrs(PER_ELEMENT)}/>`)).toBeUndefined();
    expect(breach(`<r></r ${attrs(PER_ELEMENT + 1)}/>`)).toEqual({ kind: 'element', index: 3 });
    // The parser ends it at the first `>` and reads the tag in the value.
    expect(breach(`<r></r q="><y${attrs(PER_ELEMENT + 1, '1', "'")}/>" b="1"/>`)).toEqual({
      kind: 'element',
      index: 11,
    });
  });

  it('reads long runs (a name, whitespace, a value) as it reads short ones', () => {
    const at = (xml: string) => breach(xml)?.kind;
    // A long tag name, long attribute names, long and non-ASCII whitespace, a long value.
    expect(at(`<${'x'.repeat(1000)}${attrs(PER_ELEMENT)}/>`)).toBeUndefined();
    expect(at(`<${'x'.repeat(1000)}${attrs(PER_ELEMENT + 1)}/>`)).toBe('element');
    const longNames = Array.from({ length: PER_ELEMENT + 1 }, (_, i) => ` ${'n'.repeat(40)}${i}="1"`);
    expect(at(`<x${longNames.slice(1).join('')}/>`)).toBeUndefined();
    expect(at(`<x${longNames.join('')}/>`)).toBe('element');
    expect(at(`<x a =${' '.repeat(60_000)}"1"${attrs(PER_ELEMENT - 1)}/>`)).toBeUndefined();
    expect(at(`<x a =${' '.repeat(60_000)}"1"${attrs(PER_ELEMENT)}/>`)).toBe('element');
    expect(at(`<x${'\u3000'.repeat(50)}${attrs(PER_ELEMENT + 1).replaceAll(' ', '\u3000')}/>`)).toBe(
      'element',
    );
    expect(at(`<x a="${'>'.repeat(40_000)}"${attrs(PER_ELEMENT - 1)}/>`)).toBeUndefined();
    expect(at(`<x a="${'>'.repeat(40_000)}"${attrs(PER_ELEMENT)}/>`)).toBe('element');
    // A quote that opens no value, after many attributes: a name to the parser, counted.
    expect(at(`<x${attrs(PER_ELEMENT - 2)} "q" b="1"/>`)).toBeUndefined();
    expect(at(`<x${attrs(PER_ELEMENT - 1)} "q" b="1"/>`)).toBe('element');
    expect(at(`<r><${'a'.repeat(60_000)}`)).toBeUndefined();
  });

  it('counts the attributes of a tag left open to the end of the text', () => {
    expect(breach(`<r><x${attrs(PER_ELEMENT)}`)).toBeUndefined();
    expect(breach(`<r><x${attrs(PER_ELEMENT + 1)}`)).toEqual({ kind: 'element', index: 3 });
  });
});

describe('attributeBreach: the cap per message', () => {
  it('takes the cap in all and refuses one more', () => {
    const perTag = 200;
    const tags = (count: number) => `<x${attrs(perTag)}/>`.repeat(count);
    const full = PER_MESSAGE / perTag;
    expect(breach(`<r>${tags(full)}</r>`)).toBeUndefined();
    expect(breach(`<r>${tags(full)}<y a="1"/></r>`)).toEqual({ kind: 'message' });
    expect(breach(`<r a="1">${tags(full)}</r>`)).toEqual({ kind: 'message' });
  });
});

describe('readSoapRequest: attribute caps', () => {
  const read = (xml: string): SoapRequest =>
    readSoapRequest({
      body: new TextEncoder().encode(xml),
      contentType: 'text/xml; charset=utf-8',
      soapAction: `"${NS}AuthCode"`,
      group,
      namespace: NS,
    });
  const envelope = (operationAttrs: string, comment = '') =>
    `<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="${S11}"><soap:Body>${comment}<AuthCode xmlns="${NS}"${operationAttrs}><code>4821</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>`;

  it('reads an element with as many attributes as the cap, by either reader', () => {
    // One place is the operation's own xmlns.
    for (const comment of ['', '<!-- c -->']) {
      const r = read(envelope(attrs(PER_ELEMENT - 1), comment));
      expect(r.ok && Object.fromEntries(r.params)).toEqual({ code: '4821', phone: '+447911123456' });
    }
  });

  it('refuses one more as unreadable, naming the line and column of the element', () => {
    for (const comment of ['', '<!-- c -->']) {
      const xml = envelope(attrs(PER_ELEMENT), comment);
      const column = xml.indexOf('<AuthCode') - xml.indexOf('\n');
      expect(read(xml)).toEqual({
        ok: false,
        kind: 'unreadable',
        version: '1.1',
        text: `Server was unable to read request. ---> The element at line 2, column ${column} has more than ${PER_ELEMENT} attributes.`,
        // The operation its SOAPAction names, for the record.
        operation: expect.objectContaining({ name: 'AuthCode' }),
        xml,
      });
    }
  });

  it('names a processing instruction as such, and the message cap without a place', () => {
    const pi = read(envelope('', `<?pi${attrs(PER_ELEMENT + 1)}?>`));
    expect(!pi.ok && pi.text).toMatch(
      /---> The processing instruction at line 2, column \d+ has more than 256 attributes\.$/,
    );
    const many = read(envelope('', `<x${attrs(200)}/>`.repeat(41)));
    expect(!many.ok && [many.kind, many.text]).toEqual([
      'unreadable',
      `Server was unable to read request. ---> The message has more than ${PER_MESSAGE} attributes.`,
    ]);
  });

  it('counts elements first, as before', () => {
    const r = read(envelope(attrs(PER_ELEMENT + 1), '<x/>'.repeat(2001)));
    expect(!r.ok && r.text).toBe(
      'Server was unable to read request. ---> The message has more than 2000 elements.',
    );
  });
});
