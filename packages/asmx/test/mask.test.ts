import { findGroup, type GroupDef, MASK } from '@school/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  echoForms,
  maskAnswerText,
  maskRequestBody,
  maskRequestText,
  maskValues,
  maskXmlElements,
  readSoapRequest,
} from '../src/index.js';

const NS = 'http://tempuri.org/';
const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';
const group = findGroup('AuthCodeSending') as GroupDef;
const mask = (xml: string, values: string[] = []) => maskXmlElements(xml, ['code'], values);

describe('maskXmlElements', () => {
  it('masks plain text whatever the prefix, and leaves other elements and self-closing ones', () => {
    expect(mask('<n:code a="1">4821</n:code><phone>1</phone><code/>')).toBe(
      '<n:code a="1">***</n:code><phone>1</phone><code/>',
    );
    expect(mask('<code>4821</code>')).toBe('<code>***</code>');
    expect(mask('<code></code>')).toBe('<code>***</code>');
    expect(mask('<code />')).toBe('<code />');
    expect(mask('<codes>1</codes><xcode>2</xcode><code1>3</code1>')).toBe(
      '<codes>1</codes><xcode>2</xcode><code1>3</code1>',
    );
  });

  it('takes a name with junk after it for the secret, and a tag with junk after the name for a start tag', () => {
    // Other elements to a reader; the person who wrote them meant the code.
    expect(mask('<code-x>4821</code-x><code.1>4821</code.1><code\ufffd>4821</code\ufffd>')).toBe(
      '<code-x>***</code-x><code.1>***</code.1><code\ufffd>***</code\ufffd>',
    );
    // A byte flipped or inserted right after the name: the tag keeps its name, nothing else.
    expect(mask('<a><code?4821</code><phone>1</phone></a>')).toBe('<a><code***>***');
    expect(mask('<a><code</>4821</code><phone>1</phone></a>')).toBe(
      '<a><code***>***</code><phone>1</phone></a>',
    );
    expect(mask('<a><code\u0001>4821</code><phone>1</phone></a>')).toBe(
      '<a><code***>***</code><phone>1</phone></a>',
    );
  });

  it('masks what stands before an end tag that has no start tag', () => {
    expect(mask('<a><code/>>4821</code><phone>1</phone></a>')).toBe(
      '<a><code/>***</code><phone>1</phone></a>',
    );
    expect(mask('<a><phone>1</phone>4821<!-- x --></code></a>')).toBe('<a><phone>1</phone>***</code></a>');
    expect(mask('<a><code/></code></a>')).toBe('<a><code/></code></a>');
  });

  it('masks CDATA', () => {
    expect(mask('<code><![CDATA[4821]]></code>')).toBe('<code>***</code>');
    expect(mask('<code>48<![CDATA[21]]></code>')).toBe('<code>***</code>');
    expect(mask('<code><![CDATA[</code>4821]]></code>')).toBe('<code>***</code>');
  });

  it('masks a code split by a comment or a processing instruction', () => {
    expect(mask('<code>48<!-- x -->21</code>')).toBe('<code>***</code>');
    expect(mask('<code>48<!-- </code> -->21</code>')).toBe('<code>***</code>');
    expect(mask('<code>48<?pi x?>21</code>')).toBe('<code>***</code>');
    expect(mask('<code>48<?pi </code> ?>21</code>')).toBe('<code>***</code>');
  });

  it('masks entity and character references', () => {
    expect(mask('<code>&#52;821</code>')).toBe('<code>***</code>');
    expect(mask('<code>&#x34;&#x38;&#50;&#49;</code>')).toBe('<code>***</code>');
    expect(mask('<code>&amp;4821</code>')).toBe('<code>***</code>');
  });

  it('masks elements with any prefix, non-ASCII included, and any case', () => {
    expect(mask('<ü:code xmlns:ü="http://tempuri.org/">4821</ü:code>')).toBe(
      '<ü:code xmlns:ü="http://tempuri.org/">***</ü:code>',
    );
    expect(mask('<日本:code>4821</日本:code>')).toBe('<日本:code>***</日本:code>');
    expect(mask('<a:b:code>4821</a:b:code>')).toBe('<a:b:code>***</a:b:code>');
    expect(mask('<CODE>4821</CODE><Code>1</Code>')).toBe('<CODE>***</CODE><Code>***</Code>');
  });

  it('reads quoted attribute values whole, `>` included, and tags with whitespace', () => {
    expect(mask(`<code a="x>y" b='>'>4821</code>`)).toBe(`<code a="x>y" b='>'>***</code>`);
    expect(mask(`<code a="/">4821</code>`)).toBe(`<code a="/">***</code>`);
    expect(mask('<code\n\ta="1"\n>4821</code\n>')).toBe('<code\n\ta="1"\n>***</code\n>');
    expect(mask('<code a="<code>">4821</code>')).toBe('<code a="<code>">***</code>');
  });

  it('reads long names and tags of hundreds of attributes as it reads short ones', () => {
    const many = (count: number, value: string) =>
      Array.from({ length: count }, (_, i) => ` a${i}="${value}"`).join('');
    // `>` and `<code>` inside values, more values than one search crosses (256), then a secret.
    for (const count of [255, 256, 257, 600]) {
      const tag = `<x${many(count, '<code>>')}/>`;
      expect(mask(`<r>${tag}<code>4821</code></r>`)).toBe(`<r>${tag}<code>***</code></r>`);
      expect(mask(`<r><code${many(count, '>')}>4821</code></r>`)).toBe(
        `<r><code${many(count, '>')}>***</code></r>`,
      );
      // A value left open: the tag runs to the end, and a secret's start tag is masked from its name.
      expect(mask(`<r><code${many(count, '1')} b="4821</code></r>`)).toBe('<r><code***');
    }
    const long = 'a'.repeat(60_000);
    expect(mask(`<r><${long}/><code>4821</code></r>`)).toBe(`<r><${long}/><code>***</code></r>`);
    expect(mask(`<r><p:${long}:code>4821</p:${long}:code></r>`)).toBe(
      `<r><p:${long}:code>***</p:${long}:code></r>`,
    );
    expect(mask(`<r><code-${long}>4821</code-${long}></r>`)).toBe(`<r><code-${long}>***</code-${long}></r>`);
    expect(mask(`<r><${long}code>4821</${long}code></r>`)).toBe(`<r><${long}code>4821</${long}code></r>`);
    expect(mask(`<r><code>4821</${long}>`)).toBe('<r><code>***');
  });

  it('masks nested content, up to the matching end tag', () => {
    expect(mask('<code>48<b>2</b><c/>1</code><phone>1</phone>')).toBe('<code>***</code><phone>1</phone>');
    expect(mask('<code><code>1</code>4821</code><phone>1</phone>')).toBe('<code>***</code><phone>1</phone>');
    expect(mask('<a><code>1</code><code>2</code></a>')).toBe('<a><code>***</code><code>***</code></a>');
  });

  it('masks to the end when the document is not well-formed', () => {
    expect(mask('<a><code>4821')).toBe('<a><code>***');
    expect(mask('<a><code>48<!-- 21')).toBe('<a><code>***');
    expect(mask('<a><code>48<![CDATA[21')).toBe('<a><code>***');
    expect(mask('<a><code>48<b>21</code></a>')).toBe('<a><code>***');
    expect(mask('<a><code>4821</phone><b>x</b>')).toBe('<a><code>***');
    expect(mask('<a><code x="4821')).toBe('<a><code***');
    expect(mask('<a><code x="1">4821</code')).toBe('<a><code x="1">***');
  });

  it('does not take markup in comments, CDATA or text for elements', () => {
    expect(mask('<!-- <code> --><code>4821</code><x>a < b</x>')).toBe(
      '<!-- <code> --><code>***</code><x>a < b</x>',
    );
    expect(mask('<x><![CDATA[<code>]]></x><code>1</code>')).toBe('<x><![CDATA[<code>]]></x><code>***</code>');
  });

  it('masks what the reader read wherever it still appears (safety net)', () => {
    expect(mask('<code>1</code><x>4821</x><!-- 4821 -->', ['4821'])).toBe(
      '<code>***</code><x>***</x><!-- *** -->',
    );
    // The value as read, and trimmed (as it may appear without the whitespace around it).
    expect(mask('<x> 4821 </x><y>4821</y>', [' 4821 '])).toBe('<x>***</x><y>***</y>');
    // Shorter than 4 characters: too likely to be anything else.
    expect(mask('<x>123</x>', ['123'])).toBe('<x>123</x>');
  });

  it('masks a value only where it stands as a whole token, never inside a longer value', () => {
    // A phone, an id or another field holding the code's characters is some other value.
    for (const t of ['a4821b', '+447400104821', '48210', 'phone=%2B447400104821', 'id=x4821', '4821x'])
      expect(maskValues(t, [undefined, '4821']), t).toBe(t);
    expect(maskValues('4821 a-4821.b "4821"/4821\n4821', ['4821'])).toBe('*** a-***.b "***"/***\n***');
    expect(maskValues('+447400104821 code 4821', ['4821'])).toBe('+447400104821 code ***');
    expect(maskValues('4821_x %4821', ['4821'])).toBe('***_x %***');
    // Letters too, in either case as written; a repeated code's runs are other values.
    expect(maskValues('Lk4821 xLk4821 Lk4821x LK4821', ['Lk4821'])).toBe('*** xLk4821 Lk4821x LK4821');
    expect(maskValues('1111 11111 1111', ['1111'])).toBe('*** 11111 ***');
    expect(maskValues('48484848 4848', ['4848'])).toBe('48484848 ***');
  });

  it('needs a boundary only at an end of the value that is a letter or digit', () => {
    // An echo form with other characters at its ends: its ends are its own boundaries.
    expect(maskValues('AuthCode;code x="=Lk4821 Web', ['x="=Lk4821'])).toBe('AuthCode;code *** Web');
    expect(maskValues('ax="=Lk4821 x="=Lk4821', ['x="=Lk4821'])).toBe('ax="=Lk4821 ***');
    expect(maskValues('/=Lk4821+x/ y/=Lk4821+xy', ['=Lk4821+x'])).toBe('/***/ y/=Lk4821+xy');
    expect(maskValues('a"4821"b', ['"4821"'])).toBe('a***b');
    // A value that overlaps itself: the occurrence that stands whole is found past one that does not.
    expect(maskValues('xab-ab-ab', ['ab-ab'])).toBe('xab-***');
    expect(maskValues('ab-ab-ab', ['ab-ab'])).toBe('***-ab');
    expect(maskValues('xab-ab-abx', ['ab-ab'])).toBe('xab-ab-abx');
    expect(maskValues('x 4821 ', [' 4821 '])).toBe('x***');
  });

  it('masks every whole-token occurrence, leftmost first, and nothing else', () => {
    const alnum = (c: string | undefined) => c !== undefined && /[A-Za-z0-9]/.test(c);
    const whole = (t: string, at: number, v: string) =>
      !(alnum(v[0]) && alnum(t[at - 1])) && !(alnum(v[v.length - 1]) && alnum(t[at + v.length]));
    /** One position at a time: the rule as written. */
    const reference = (t: string, v: string) => {
      let out = '';
      let last = 0;
      for (let at = 0; at + v.length <= t.length; at++) {
        if (at < last || !t.startsWith(v, at) || !whole(t, at, v)) continue;
        out += t.slice(last, at) + MASK;
        last = at + v.length;
      }
      return out + t.slice(last);
    };
    const piece = fc.stringMatching(/^[ab1-]{1,3}$/);
    fc.assert(
      fc.property(
        fc.stringMatching(/^[ab1.-]{4,7}$/),
        fc.array(fc.oneof(piece, piece, fc.constant('<v>')), { maxLength: 12 }),
        (v, parts) => {
          const t = parts.map((p) => (p === '<v>' ? v : p)).join('');
          const masked = maskValues(t, [v]);
          expect(masked).toBe(reference(t, v));
          // What stays of the value stands inside something longer.
          expect(reference(masked, v)).toBe(masked);
        },
      ),
      { seed: 42, numRuns: 2000 },
    );
  });

  it('leaves text without secret elements as it is', () => {
    const xml = `<?xml version="1.0"?><soap:Envelope xmlns:soap="${S11}"><soap:Body><x a='1'>t</x></soap:Body></soap:Envelope>`;
    expect(mask(xml)).toBe(xml);
    expect(maskXmlElements('<code>1</code>', [])).toBe('<code>1</code>');
  });
});

describe('maskRequestBody', () => {
  it('masks a body whatever it is: XML, a form, multipart, JSON, or neither', () => {
    expect(maskRequestBody('<a><code>4821</code></a>', ['code'])).toBe('<a><code>***</code></a>');
    expect(maskRequestBody('%63ode=4821&phone=1', ['code'])).toBe('%63ode=***&phone=1');
    expect(maskRequestBody('{"x":"4821"}', ['code'], ['4821'])).toBe('{"x":"***"}');
    expect(maskRequestBody('{"code":"Lk4821","phone":"+1"}', ['code'])).toBe('{"code":"***","phone":"+1"}');
    expect(
      maskRequestBody(`--b\r\nContent-Disposition: form-data; name="code"\r\n\r\nLk4821\r\n--b--`, ['code']),
    ).toBe(`--b\r\nContent-Disposition: form-data; name="code"\r\n\r\n***\r\n--b--`);
    // An element's text in the shape of a field: the value goes too.
    expect(maskRequestBody('<a><code>1</code><phone>code=Lk4821</phone></a>', ['code'])).toBe(
      '<a><code>***</code><phone>code=***</phone></a>',
    );
    const xml = '<a>x&amp;y &lt; z</a><b t="1&amp;2"/>';
    expect(maskRequestBody(xml, ['code'])).toBe(xml);
  });
});

// --- named values: URLs, forms, JSON, text -----------------------------------------------------------

const text = (t: string) => maskRequestText(t, ['code']);

describe('maskRequestText', () => {
  it('masks query and form fields whatever the case or escapes of the name', () => {
    expect(text('code=1234&phone=%2B1')).toBe('code=***&phone=%2B1');
    expect(text('%63ode=1234')).toBe('%63ode=***');
    expect(text('CODE=1234')).toBe('CODE=***');
    expect(text('co%64e=1')).toBe('co%64e=***');
    expect(text('%43%4f%44%45=1&%43%4F%44%45=2')).toBe('%43%4f%44%45=***&%43%4F%44%45=***');
    expect(text('code=1&code=2&Code=3')).toBe('code=***&code=***&Code=***');
    expect(text('/A.asmx/AuthCode?code=1&phone=2')).toBe('/A.asmx/AuthCode?code=***&phone=2');
    // Nothing to mask: no value, or no separator.
    expect(text('code=&phone=1&code')).toBe('code=&phone=1&code');
  });

  it('masks path parameters anywhere in the path', () => {
    expect(text('/AuthCodeSending.asmx/AuthCode;code=LkB7x1?phone=%2B44')).toBe(
      '/AuthCodeSending.asmx/AuthCode;code=***?phone=%2B44',
    );
    expect(text('/AuthCode;CODE=x;phone=1')).toBe('/AuthCode;CODE=***;phone=1');
    expect(text('/a;code=x/b;%63ode=y#f')).toBe('/a;code=***/b;%63ode=***#f');
    expect(text('/code/Lk4821')).toBe('/code/Lk4821');
  });

  it('takes junk between the name and the separator for part of the name', () => {
    for (const junk of [
      '%00',
      '\0',
      ' ',
      '\t ',
      '[]',
      '[0]',
      '.x',
      '_x',
      '+',
      '%20',
      '%',
      '%Z',
      '-1',
      '"',
      "'",
    ])
      expect(text(`?Code${junk}=Lk4821&phone=1`), JSON.stringify(junk)).toBe(`?Code${junk}=***&phone=1`);
  });

  it('reads `=` and `:` as separators, written or escaped, with whitespace and a quote around', () => {
    expect(text('code:Lk4821')).toBe('code:***');
    expect(text('code%3DLk4821&code%3aLk4822')).toBe('code%3D***&code%3a***');
    expect(text('{"code":"Lk4821","phone":"+1"}')).toBe('{"code":"***","phone":"+1"}');
    expect(text('{ "Code" : "Lk4821" , "phone" : "+1" }')).toBe('{ "Code" : "***" , "phone" : "+1" }');
    expect(text("{'code': 'Lk4821'}")).toBe("{'code': '***'}");
    expect(text('{"code":4821,"phone":"+1"}')).toBe('{"code":***"phone":"+1"}');
    expect(text('code = Lk4821\r\nphone: 1')).toBe('code = ***\r\nphone: 1');
    expect(text('<AuthCode code="Lk4821" phone="1"/>')).toBe('<AuthCode code="***" phone="1"/>');
  });

  it('ends a value at the first delimiter, escapes included in it', () => {
    for (const end of ['&', ';', '/', '?', '#', '"', "'", '<', '>', ' ', '\t', '\r\n'])
      expect(text(`code=Lk%34821${end}x=1`), JSON.stringify(end)).toBe(`code=***${end}x=1`);
    expect(text('code=Lk+48%2621=1,2')).toBe('code=***');
  });

  it('masks the text in a tag named like a secret wherever it stands, up to its end tag', () => {
    expect(text('<!-- <code>Lk4821</code> --><phone>1</phone>')).toBe(
      '<!-- <code>***</code> --><phone>1</phone>',
    );
    expect(text('<x a="<n:CODE i:type=\'s\'> Lk4821 </n:CODE>"/>')).toBe(
      '<x a="<n:CODE i:type=\'s\'> ***</n:CODE>"/>',
    );
    expect(text('<!-- <code:>Lk4821</code:> -->')).toBe('<!-- <code:>***</code:> -->');
    // Markup in it, or none of its end tag: up to the end tag, or to the end.
    expect(text('<a b="<code><!--Lk4821</code><phone>1</phone>')).toBe(
      '<a b="<code>***</code><phone>1</phone>',
    );
    expect(text('<?x <code x="><![CDATA[Lk4821</code>')).toBe('<?x <code x=">***</code>');
    expect(text('<?x<code></Lk4821</</code>')).toBe('<?x<code>***</code>');
    expect(text('<!-- <code>Lk4821 --><phone>1</phone>')).toBe('<!-- <code>***');
    // After a self-closing one, up to the next start tag.
    expect(text('<![CDATA[<code/>>Lk4821</code>]]>')).toBe('<![CDATA[<code/>***</code>]]>');
    expect(text('<a b="<code/>><!DOCTYPE x>Lk4821<![CDATA[</code><phone>1</phone>')).toBe(
      '<a b="<code/>***</code><phone>1</phone>',
    );
    expect(text('<code/>></Lk4821<!--</code>\n<phone>1</phone>')).toBe('<code/>***</code>\n<phone>1</phone>');
    expect(text('<a b="<code/>><Lk4821\u0000</code><phone>1</phone>')).toBe(
      '<a b="<code/>***</code><phone>1</phone>',
    );
    // A separated value in the tag, and its text.
    expect(text('<AuthCo<code~\r:d><Lk4821</code>')).toBe('<AuthCo<code~\r:***>***</code>');
    expect(text('<code/>\n  <phone>1</phone>')).toBe('<code/>\n  <phone>1</phone>');
    expect(text('<code/>\n</AuthCode></soap:Body>')).toBe('<code/>\n***');
    // Values in its attributes too.
    expect(text('<!-- <code a="code=Lk4821" b=\'1\'>Lk4822</code> -->')).toBe(
      '<!-- <code a="code=***" b=\'1\'>***</code> -->',
    );
    // Not an opening tag.
    for (const t of ['</code>Lk4821<x/>', '<xcode>Lk4821</xcode>', 'a:code>Lk4821']) expect(text(t)).toBe(t);
  });

  it('finds the name as a word only', () => {
    for (const form of [
      'codes=1',
      'barcode=1',
      'xcode=1',
      '%41code=1',
      'code1=1',
      'code%31=1',
      'x=code',
      'AuthCode;',
    ])
      expect(text(form), form).toBe(form);
    expect(text('the code is: 1')).toBe('the code is: 1');
    expect(text('ücode=1&%C3%BCcode=2&_code=3')).toBe('ücode=***&%C3%BCcode=***&_code=***');
  });

  it('finds names with digits too (their start read by the pattern, not backwards)', () => {
    expect(maskRequestText('a=1&ID2=x&%69d%32=y&id22=z&xid2=w', ['id2'])).toBe(
      'a=1&ID2=***&%69d%32=***&id22=z&xid2=w',
    );
  });

  it('does not throw on malformed escapes or cut text', () => {
    for (const t of [
      '%',
      '%%',
      '%g',
      'code',
      'code=',
      'code%',
      'code%3',
      '&&&',
      '=',
      '==',
      '%FF%FE=1',
      'code:',
    ])
      expect(() => text(t)).not.toThrow();
    expect(text('code%3')).toBe('code%3');
    expect(text('code=%E0%A4%A')).toBe('code=***');
  });

  it('masks every field URLSearchParams would read as the code', () => {
    const names = [
      'code',
      'CODE',
      '%63ode',
      'c%6Fde',
      'cod%65',
      'co+de',
      'code%00',
      '%E2%80%8Bcode',
      '?code',
    ];
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...names, 'phone', 'x'), fc.stringMatching(/^[a-z0-9%]{0,6}$/)), {
          maxLength: 5,
        }),
        (pairs) => {
          const form = pairs.map(([k, v]) => `${k}=${v}`).join('&');
          for (const [k, v] of new URLSearchParams(text(form))) {
            if (k.toLowerCase() === 'code') expect(['', MASK]).toContain(v);
          }
        },
      ),
      { seed: 42, numRuns: 300 },
    );
  });
});

describe('maskAnswerText', () => {
  const answer = (t: string, values: string[] = []) => maskAnswerText(t, ['code'], values);

  it('masks what an answer echoes of a request in the shape of a field', () => {
    expect(answer('AuthCode;code=Lk4821 Web Service method name is not valid.')).toBe(
      'AuthCode;code=*** Web Service method name is not valid.',
    );
    expect(answer("Invalid phone: 'code=Lk4821' is not a valid phone number.")).toBe(
      "Invalid phone: 'code=***' is not a valid phone number.",
    );
    expect(answer('<faultstring>… Lk4821 …</faultstring>', ['Lk4821'])).toBe(
      '<faultstring>… *** …</faultstring>',
    );
  });

  it('masks a value after `:` only when nothing stands between them and the name', () => {
    expect(answer('AuthCode;code:Lk4821 Web Service method name is not valid.')).toBe(
      'AuthCode;code:*** Web Service method name is not valid.',
    );
  });

  it('masks what a request held once decoded, where the echo is another shape', () => {
    const found: string[] = [];
    expect(maskRequestText('/A.asmx/AuthCode;code%2F=Lk%34821+x?phone=1', ['code'], found)).toBe(
      '/A.asmx/AuthCode;code%2F=***?phone=1',
    );
    expect(found).toEqual(['Lk%34821+x']);
    expect(echoForms(found, ['code'])).toEqual(['Lk%34821+x', '34821', 'Lk4821+x', 'Lk4821', 'Lk4821 x']);
    expect(
      answer('AuthCode;code/=Lk4821+x Web Service method name is not valid.', echoForms(found, ['code'])),
    ).toBe('AuthCode;code/=*** Web Service method name is not valid.');
    // Escaped around it by the echo: the code itself, letters and digits, still goes.
    expect(answer('AuthCode;code x=&quot;=Lk4821 Web', echoForms(['x="=Lk4821'], ['code']))).toBe(
      'AuthCode;code x=&quot;=*** Web',
    );
    // What the XML pass masked, as a parser's error quotes it.
    const xmlFound: string[] = [];
    expect(maskRequestBody('<a><code><Lk4821&#1;</code></a>', ['code'], [], xmlFound)).toBe('<a><code>***');
    expect(answer("Tag 'Lk4821&#1;</code' is an invalid name.", echoForms(xmlFound, ['code']))).toBe(
      "Tag '***&#1;</code' is an invalid name.",
    );
  });

  it("leaves the server's own words", () => {
    for (const t of [
      'Invalid code: it must be 1 to 16 letters or digits.',
      'Missing parameter: code.',
      '{"title":"Invalid request","errors":{"code":"A code is 1 to 16 letters or digits, nothing else."}}',
      '<soap:Code><soap:Value>soap:Sender</soap:Value></soap:Code>',
    ])
      expect(answer(t)).toBe(t);
  });
});

// --- multipart ----------------------------------------------------------------------------------------

const body = (t: string) => maskRequestBody(t, ['code']);
const part = (disposition: string, content: string, nl = '\r\n') =>
  `--XyZ${nl}Content-Disposition: ${disposition}${nl}${nl}${content}${nl}`;

describe('multipart parts', () => {
  it('masks the content of a part named like a secret, and only that', () => {
    const phone = part('form-data; name="phone"', '+447911123456');
    expect(body(`${part('form-data; name="code"', 'Lk4821')}${phone}--XyZ--\r\n`)).toBe(
      `${part('form-data; name="code"', MASK)}${phone}--XyZ--\r\n`,
    );
    expect(body(`preamble\r\n${phone}${part('form-data; name="code"', 'Lk4821')}--XyZ--`)).toBe(
      `preamble\r\n${phone}${part('form-data; name="code"', MASK)}--XyZ--`,
    );
  });

  it('reads the name whatever its parameter, quoting or case, and LF line ends', () => {
    for (const disposition of [
      'form-data; name=code',
      'form-data; NAME="CODE"',
      "form-data; name='code'",
      "form-data; name*=UTF-8''%63ode",
      'form-data; name="x"; filename="code.txt"',
      'FORM-DATA;name="code[]"',
    ]) {
      for (const nl of ['\r\n', '\n']) {
        expect(body(`${part(disposition, 'Lk4821', nl)}--XyZ--`), disposition).toBe(
          `${part(disposition, MASK, nl)}--XyZ--`,
        );
      }
    }
    const other = `${part('form-data; name="codes"', '1')}${part('form-data; name="barcode"', '2')}--XyZ--`;
    expect(body(other)).toBe(other);
  });

  it('masks a content of many lines, and one with other headers', () => {
    const headers = 'Content-Disposition: form-data; name="code"\r\nContent-Type: text/plain';
    expect(body(`--b\r\n${headers}\r\n\r\nLk\r\n48\r\n--x\r\n21\r\n--b--`)).toBe(
      `--b\r\n${headers}\r\n\r\n***\r\n--b--`,
    );
    expect(body('--b\r\nX-Note: code\r\n\r\n\r\n--b--')).toBe('--b\r\nX-Note: code\r\n\r\n\r\n--b--');
  });

  it('masks to the end when the part is cut short or never ends', () => {
    expect(body('--b\r\nContent-Disposition: form-data; name="code"\r\n\r\nLk4821')).toBe(
      '--b\r\nContent-Disposition: form-data; name="code"\r\n\r\n***',
    );
    expect(body('--b\r\nContent-Disposition: form-data; name="code"\r\nLk4821\r\nx')).toBe(
      '--b\r\nContent-Disposition: form-data; name="code"\r\n***',
    );
  });
});

// --- a property: whatever the form the reader accepts, the masked text holds no code --------------

const code = fc
  .stringMatching(/^[A-Za-z0-9]{6,16}$/)
  // A digit and a letter no hex digit is: the code cannot be a word of the envelope or a number.
  .filter((c) => /[0-9]/.test(c) && /[g-zG-Z]/.test(c));

/** The code's characters written as a mix of text, CDATA and references, split by comments and PIs. */
const codeContent = (value: string) =>
  fc
    .array(fc.integer({ min: 1, max: value.length - 1 }), { maxLength: 3 })
    .chain((cuts) => {
      const at = [...new Set(cuts)].sort((a, b) => a - b);
      const chunks = [0, ...at].map((start, i) => value.slice(start, at[i] ?? value.length));
      return fc.tuple(
        ...chunks.map((chunk) =>
          fc
            .tuple(
              fc.constantFrom('text', 'cdata', 'dec', 'hex', 'mixed'),
              fc.constantFrom('', '<!-- x -->', '<!---->', '<?pi a>b?>', '<?x?>', '<!-- </code> -->'),
            )
            .map(([form, sep]) => sep + writeChunk(chunk, form)),
        ),
      );
    })
    .map((parts) => parts.join(''));

function writeChunk(chunk: string, form: string): string {
  const ref = (ch: string, hex: boolean) =>
    hex ? `&#x${(ch.codePointAt(0) ?? 0).toString(16)};` : `&#${ch.codePointAt(0)};`;
  switch (form) {
    case 'cdata':
      return `<![CDATA[${chunk}]]>`;
    case 'dec':
      return [...chunk].map((c) => ref(c, false)).join('');
    case 'hex':
      return [...chunk].map((c) => ref(c, true)).join('');
    case 'mixed':
      return [...chunk].map((c, i) => (i % 2 === 0 ? ref(c, i % 4 === 0) : c)).join('');
    default:
      return chunk;
  }
}

describe('masking what the reader reads', () => {
  it('leaves no code in any envelope the reader takes it from', () => {
    fc.assert(
      fc.property(
        code.chain((value) => fc.tuple(fc.constant(value), codeContent(value))),
        fc.constantFrom('', 'n', 'ü', 'ns1', '日本', 'x-y.z'),
        fc.constantFrom('', ' a="x>y"', ' b=\'>\' c="</code>"', '\n\t'),
        fc.boolean(),
        ([value, content], prefix, attrs, soap12) => {
          const tag = prefix ? `${prefix}:code` : 'code';
          const decl = prefix ? ` xmlns:${prefix}="${NS}"` : '';
          const xml = `<soap:Envelope xmlns:soap="${soap12 ? S12 : S11}"><soap:Body><AuthCode xmlns="${NS}"><${tag}${decl}${attrs}>${content}</${tag}><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>`;
          const parsed = readSoapRequest({
            body: new TextEncoder().encode(xml),
            contentType: soap12 ? 'application/soap+xml' : 'text/xml',
            soapAction: soap12 ? undefined : `"${NS}AuthCode"`,
            group,
            namespace: NS,
          });
          expect(parsed.ok && parsed.params.get('code')).toBe(value);
          // The structure alone masks it; the safety net is not needed here.
          const masked = maskXmlElements(xml, ['code']);
          expect(masked).not.toContain(value);
          expect(masked).toContain(`>${MASK}</${tag}>`);
          expect(masked.replace(`>${MASK}<`, `>${content}<`)).toBe(xml);
        },
      ),
      { seed: 42, numRuns: 500 },
    );
  });
});

// --- a property: whatever the shape, the masked text holds no code -----------------------------------

const pct = (ch: string) => `%${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(2, '0')}`;

/** The name in any case, any of its characters escaped. */
const spelling = fc
  .array(fc.constantFrom('lower', 'upper', 'pct', 'pct-lower'), { minLength: 4, maxLength: 4 })
  .map((hows) =>
    [...'code']
      .map((ch, i) =>
        hows[i] === 'upper'
          ? ch.toUpperCase()
          : hows[i] === 'pct'
            ? pct(ch)
            : hows[i] === 'pct-lower'
              ? pct(ch).toLowerCase()
              : ch,
      )
      .join(''),
  );

/** A field holding the code in one of the shapes the masking knows. */
const fieldArb = (value: string) =>
  fc
    .record({
      name: spelling,
      junk: fc.constantFrom('', '%00', '\0', '[]', '.x', ' ', '+', '"'),
      separator: fc.constantFrom('=', ':', '%3D', '%3a', ' = ', '": "'),
      encode: fc.boolean(),
      shape: fc.constantFrom('query', 'path', 'form', 'json', 'multipart', 'xml-text', 'hidden-tag', 'line'),
    })
    .map(({ name, junk, separator, encode, shape }) => {
      const v = encode ? [...value].map((c, i) => (i % 2 ? c : pct(c))).join('') : value;
      const field = `${name}${junk}${separator}${v}`;
      return { written: v, input: shaped(shape, field, `${name}${junk}`, separator, v) };
    });

function shaped(shape: string, field: string, name: string, separator: string, v: string): string {
  switch (shape) {
    case 'query':
      return `/AuthCodeSending.asmx/AuthCode?${field}&phone=%2B447911123456`;
    case 'path':
      return `/AuthCodeSending.asmx/AuthCode;${field}?phone=%2B447911123456`;
    case 'json':
      return `{"${name}${separator.includes('"') ? separator : `"${separator}"`}${v}","phone":"+1"}`;
    case 'multipart':
      return `--B\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${v}\r\n--B--`;
    case 'hidden-tag':
      return `<a><!-- <n:${name}>${v}</n:${name}> --><phone>1</phone></a>`;
    case 'xml-text':
      return `<a><phone>${field}</phone></a>`;
    case 'line':
      return `x\r\n${field}\r\ny`;
    default:
      return `${field}&phone=1`;
  }
}

describe('masking any shape', () => {
  it('leaves no code in any field of any shape', () => {
    fc.assert(
      fc.property(
        code.chain((value) => fc.tuple(fc.constant(value), fieldArb(value))),
        ([value, { written, input }]) => {
          const masked = maskRequestBody(input, ['code']);
          expect(masked).not.toContain(value);
          expect(masked).not.toContain(written);
          expect(masked).toContain(MASK);
          // What follows the value stays readable.
          if (input.includes('phone')) expect(masked).toContain('phone');
        },
      ),
      { seed: 42, numRuns: 1000 },
    );
  });
});
