/**
 * Crafted SOAP envelopes under a body limit raised to 1 MiB (ASMX_MAX_BODY_BYTES; 64 KiB by
 * default), each sent as it is and with a comment before the operation element (a comment sends
 * the message to the general reader, fast-xml-parser's validator and parser): the answer a client
 * sees and the call's record. How long each takes is bench/hostile-requests.mjs's business, not a
 * test's (docs/faults.md#reading-the-request).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastCall, startTestApp, type TestApp } from './helpers.js';

const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';
const NS = 'http://tempuri.org/';
const BODY_LIMIT = 1024 * 1024;
const HEAD = `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${S11}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body>`;
const TAIL = '</soap:Body></soap:Envelope>';
const COMMENT = '<!-- the general reader -->';
const PARAMS = '<code>4821</code><phone>+447911123456</phone>';
const READ_FAILED = 'Server was unable to read request. ---> ';

const operation = (attributes = '', inner = PARAMS) =>
  `<AuthCode xmlns="${NS}"${attributes}>${inner}</AuthCode>`;
const many = (count: number, piece: (i: string) => string) =>
  Array.from({ length: count }, (_, i) => piece(i.toString(36))).join('');
const attributes = (count: number) => many(count, (i) => ` a${i}="1"`);

/** What the client must get and the record must say. */
type Expected =
  | { readonly unreadable: (xml: string) => string }
  | { readonly fault: string }
  | { readonly ok: true };

/** Where the first `marker` is, as the refusal words it (one line: column = index + 1). */
const columnOf = (xml: string, marker: string) => xml.indexOf(marker) + 1;
const crowdedTag = (kind: string, marker: string) => (xml: string) =>
  `The ${kind} at line 1, column ${columnOf(xml, marker)} has more than 256 attributes.`;
const TOO_MANY_ELEMENTS = () => 'The message has more than 2000 elements.';
const TOO_MANY_REFERENCES = () => 'The message has more than 8000 entity and character references.';
/** The operation with `text` as its code. */
const code = (text: string) => operation('', `<code>${text}</code><phone>+447911123456</phone>`);

const TOO_LONG_FOR_THE_GENERAL_READER = () =>
  `The message is longer than ${16 * 1024} characters and not in the plain form read at that length: no comments, CDATA sections, processing instructions, references or carriage returns.`;

/** `withComment`: what the same message with a comment must give, when not `expected`. */
const CASES: { name: string; operation: string; expected: Expected; withComment?: Expected }[] = [
  {
    name: '88 000 attributes on the operation element',
    operation: operation(attributes(88_000)),
    expected: { unreadable: crowdedTag('element', '<AuthCode') },
  },
  {
    name: '30 000 namespace declarations',
    operation: operation(many(30_000, (i) => ` xmlns:p${i}="urn:x${i}"`)),
    expected: { unreadable: crowdedTag('element', '<AuthCode') },
  },
  {
    name: '256 attributes on each of 500 elements',
    operation: operation('', PARAMS + `<x${many(256, (i) => ` a${i}=""`)}/>`.repeat(500)),
    expected: { unreadable: () => 'The message has more than 8000 attributes.' },
  },
  {
    name: '88 000 attributes in a processing instruction',
    operation: operation('', `${PARAMS}<?pi${attributes(88_000)}?>`),
    expected: { unreadable: crowdedTag('processing instruction', '<?pi') },
  },
  {
    // Readable: an element the operation does not know is ignored; but not at this length in a
    // form only the general reader takes.
    name: 'one 900 KB element name',
    operation: operation('', `${PARAMS}<${'a'.repeat(900_000)}/>`),
    expected: { ok: true },
    withComment: { unreadable: TOO_LONG_FOR_THE_GENERAL_READER },
  },
  {
    name: '900 KB of text in an element the operation ignores',
    operation: operation('', `${PARAMS}<note>${'a'.repeat(900_000)}</note>`),
    expected: { ok: true },
    withComment: { unreadable: TOO_LONG_FOR_THE_GENERAL_READER },
  },
  {
    // Under the general reader's length: read in either form.
    name: '15 KB of text in an element the operation ignores',
    operation: operation('', `${PARAMS}<note>${'a'.repeat(15_000)}</note>`),
    expected: { ok: true },
  },
  {
    name: '60 000 sibling elements',
    operation: operation('', PARAMS + '<a/>'.repeat(60_000)),
    expected: { unreadable: TOO_MANY_ELEMENTS },
  },
  // Every `&` counts against the cap on references, wherever it is and whatever follows it.
  ...(
    [
      ['60 000 &amp; references', code('&amp;'.repeat(60_000))],
      ['60 000 &#65; references', code('&#65;'.repeat(60_000))],
      ['60 000 &#x31; references', code('&#x31;'.repeat(60_000))],
      ['60 000 &#0000000049; references', code('&#0000000049;'.repeat(60_000))],
      ['60 000 unknown &foo; references', code('&foo;'.repeat(60_000))],
      ['60 000 &amp; references in an attribute', operation(` a="${'&amp;'.repeat(60_000)}"`)],
      [
        '60 000 &amp; references in another element',
        operation('', `${PARAMS}<note>${'&amp;'.repeat(60_000)}</note>`),
      ],
      [
        '60 000 & in a CDATA section',
        operation('', `${PARAMS}<note><![CDATA[${'&'.repeat(60_000)}]]></note>`),
      ],
    ] as const
  ).map(([name, xml]) => ({ name, operation: xml, expected: { unreadable: TOO_MANY_REFERENCES } })),
  {
    name: '50 000 nested elements',
    operation: operation('', PARAMS + '<a>'.repeat(50_000) + '</a>'.repeat(50_000)),
    expected: { unreadable: TOO_MANY_ELEMENTS },
  },
  {
    name: "100 000 unclosed '<a'",
    operation: operation('', PARAMS + '<a'.repeat(100_000)),
    expected: { unreadable: TOO_MANY_ELEMENTS },
  },
  {
    name: "50 000 unclosed '<a><b'",
    operation: operation('', PARAMS + '<a><b'.repeat(50_000)),
    expected: { unreadable: TOO_MANY_ELEMENTS },
  },
];

describe('hostile envelopes under the body limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    // The reader's own caps, behind the body cap: checked at the size an operator may raise
    // ASMX_MAX_BODY_BYTES to.
    t = await startTestApp({ ASMX_MAX_BODY_BYTES: String(BODY_LIMIT) });
  });
  afterAll(() => t.close());

  const requests = CASES.flatMap((c) =>
    [false, true].map((comment) => ({
      ...c,
      expected: (comment && c.withComment) || c.expected,
      name: comment ? `${c.name}, with a comment` : c.name,
      xml: HEAD + (comment ? COMMENT : '') + c.operation + TAIL,
    })),
  );

  it.each(requests)('$name', async ({ xml, expected }) => {
    const payload = Buffer.from(xml);
    expect(payload.length).toBeLessThan(BODY_LIMIT);
    const before = await t.app.history.count();
    const res = await t.app.inject({
      method: 'POST',
      url: '/AuthCodeSending.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
      payload,
    });
    expect(res.headers['content-type']).toBe('text/xml; charset=utf-8');
    expect(await t.app.history.count()).toBe(before + 1);
    const row = await lastCall(t.app);
    expect(row).toMatchObject({ binding: 'soap11', group_name: 'AuthCodeSending' });

    if ('unreadable' in expected) {
      // ASMX's answer to XML it could not read: 400, empty body; the reason in the record only.
      expect(res.statusCode).toBe(400);
      expect(res.body).toBe('');
      expect(row).toMatchObject({
        outcome: 'client-error',
        status: 400,
        error: READ_FAILED + expected.unreadable(xml),
      });
      expect(row.note).toMatch(/empty body/);
    } else if ('fault' in expected) {
      expect(res.statusCode).toBe(500);
      expect(res.body).toContain(
        `<faultcode>soap:Client</faultcode><faultstring>${expected.fault}</faultstring>`,
      );
      expect(row).toMatchObject({
        operation: 'AuthCode',
        outcome: 'client-error',
        status: 500,
        error: expected.fault,
      });
    } else {
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain(`<AuthCodeResponse xmlns="${NS}" />`);
      expect(row).toMatchObject({ operation: 'AuthCode', outcome: 'ok', status: 200, error: null });
    }
  });

  it("keeps a reader's error short in the record, however long the tag it quotes", async () => {
    // Under the general reader's length, which words the error.
    const name = 'a'.repeat(15_000);
    const res = await t.app.inject({
      method: 'POST',
      url: '/AuthCodeSending.asmx',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
      payload: `${HEAD}<AuthCode xmlns="${NS}"><code>1</code></${name}></AuthCode>${TAIL}`,
    });
    expect(res.statusCode).toBe(400);
    const row = await lastCall(t.app);
    expect(row.error).toMatch(/^Server was unable to read request\. ---> There is an error in XML document/);
    expect(row.error?.length).toBeLessThan(2100);
    expect(row.error).toMatch(/… \[\d+ more characters\]$/);
  });

  describe('the cap on entity and character references (8000 per message)', () => {
    /** The envelope in SOAP `version`, sent as that version's clients send it. */
    const send = (version: '1.1' | '1.2', inner: string, op = 'AuthCode', path = '/AuthCodeSending.asmx') => {
      const env = version === '1.1' ? S11 : S12;
      const payload = `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${env}"><soap:Body><${op} xmlns="${NS}">${inner}</${op}></soap:Body></soap:Envelope>`;
      return t.app.inject({
        method: 'POST',
        url: path,
        headers:
          version === '1.1'
            ? { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}${op}"` }
            : { 'content-type': `application/soap+xml; charset=utf-8; action="${NS}${op}"` },
        payload,
      });
    };
    /**
     * `count` `&`s: references in text and in an attribute, and `&` in CDATA and a comment; most
     * in CDATA, one character each, so that the message stays under the general reader's length.
     */
    const ampersands = (count: number) => {
      const text = 1000;
      const attribute = 500;
      const cdata = count - text - attribute - 1;
      return `<note a="${'&#x41;'.repeat(attribute)}">${'&amp;'.repeat(text)}<![CDATA[${'&'.repeat(cdata)}]]></note><!-- & -->`;
    };

    it.each(['1.1', '1.2'] as const)(
      'takes 8000, every `&` counted, and refuses one more as XML it cannot read, in SOAP %s; both recorded',
      async (version) => {
        const before = await t.app.history.count();
        const taken = await send(version, `${PARAMS}${ampersands(8000)}`);
        expect(taken.statusCode).toBe(200);
        expect(taken.body).toContain(`<AuthCodeResponse xmlns="${NS}" />`);
        expect(await lastCall(t.app)).toMatchObject({ operation: 'AuthCode', outcome: 'ok', status: 200 });

        const refused = await send(version, `${PARAMS}${ampersands(8001)}`);
        expect(refused.statusCode).toBe(400);
        expect(refused.body).toBe('');
        expect(refused.headers['content-type']).toBe(
          version === '1.1' ? 'text/xml; charset=utf-8' : 'application/soap+xml; charset=utf-8',
        );
        expect(await t.app.history.count()).toBe(before + 2);
        const row = await lastCall(t.app);
        expect(row).toMatchObject({
          binding: version === '1.1' ? 'soap11' : 'soap12',
          group_name: 'AuthCodeSending',
          operation: 'AuthCode',
          outcome: 'client-error',
          status: 400,
          error: READ_FAILED + TOO_MANY_REFERENCES(),
        });
        expect(row.request).toContain('<note a="&#x41;');
        expect(row.request).not.toContain('4821');
      },
    );

    it.each(['1.1', '1.2'] as const)(
      "reads a real client's few references as before, in SOAP %s",
      async (version) => {
        const res = await send(
          version,
          '<termId>2026&#x2D;1</termId><srid>S&amp;1042 caf&#233; &lt;&#8364;&gt;</srid><classId>7&#66;</classId>',
          'GetBookPdfByTerm',
          '/BookPdf.asmx',
        );
        expect(res.statusCode).toBe(500);
        expect(res.body).toContain("No book exists for term '2026-1' and class '7B'.");
        const row = await lastCall(t.app);
        expect(row).toMatchObject({
          binding: version === '1.1' ? 'soap11' : 'soap12',
          operation: 'GetBookPdfByTerm',
        });
        expect(JSON.parse(row.params ?? '{}')).toEqual({
          termId: '2026-1',
          srid: 'S&1042 café <€>',
          classId: '7B',
        });
      },
    );
  });
});
