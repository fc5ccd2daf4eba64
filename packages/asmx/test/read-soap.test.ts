import { findGroup, type GroupDef } from '@school/contract';
import { describe, expect, it } from 'vitest';
import { readSoapRequest, type SoapRequest, soapRefusalAnswer } from '../src/index.js';

const NS = 'http://tempuri.org/';
const group = findGroup('AuthCodeSending') as GroupDef;
const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';

const envelope = (inner: string, env = S11) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${env}"><soap:Body>${inner}</soap:Body></soap:Envelope>`;
const authCode =
  '<AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>+447911123456</phone></AuthCode>';

function read(
  body: string | Uint8Array,
  contentType: string | undefined = 'text/xml; charset=utf-8',
  soapAction: string | undefined = `"${NS}AuthCode"`,
): SoapRequest {
  return readSoapRequest({
    body: typeof body === 'string' ? new TextEncoder().encode(body) : body,
    contentType,
    soapAction,
    group,
    namespace: NS,
  });
}

/** `read` without defaults: an undefined Content-Type or SOAPAction is one not sent. */
const readExactly = (body: string, contentType: string | undefined, soapAction: string | undefined) =>
  readSoapRequest({ body: new TextEncoder().encode(body), contentType, soapAction, group, namespace: NS });

/** A fault's text; another refusal's text behind its status (it is kept for the record only). */
const faultText = (r: SoapRequest) =>
  r.ok ? undefined : r.kind === 'fault' ? r.text : `${soapRefusalAnswer(r).status} ${r.text}`;

describe('readSoapRequest: version and operation', () => {
  it('reads a SOAP 1.1 call routed by a quoted or unquoted SOAPAction', () => {
    for (const action of [`"${NS}AuthCode"`, `${NS}AuthCode`]) {
      const r = read(envelope(authCode), 'text/xml; charset=utf-8', action);
      expect(r.ok && r.version).toBe('1.1');
      expect(r.ok && Object.fromEntries(r.params)).toEqual({ code: '4821', phone: '+447911123456' });
    }
  });

  it('routes a SOAP 1.1 envelope without SOAPAction by its body element', () => {
    const r = read(envelope(authCode), 'text/xml', undefined);
    expect(r.ok && [r.version, r.operation.name]).toEqual(['1.1', 'AuthCode']);
  });

  it('routes SOAP 1.2 by the action parameter, then by the body, ignoring SOAPAction', () => {
    const withAction = read(
      envelope(authCode, S12),
      `application/soap+xml; charset=utf-8; action="${NS}AuthCode"`,
      '"junk"',
    );
    expect(withAction.ok && [withAction.version, withAction.operation.name]).toEqual(['1.2', 'AuthCode']);
    const byBody = read(envelope(authCode, S12), 'application/soap+xml', undefined);
    expect(byBody.ok && byBody.operation.name).toBe('AuthCode');
    const textXml = read(envelope(authCode, S12), 'text/xml', undefined);
    expect(textXml.ok && textXml.version).toBe('1.2');
  });

  it('faults on an unknown SOAPAction, an unknown 1.2 action and a body naming nothing', () => {
    expect(faultText(read(envelope(authCode), 'text/xml', '"http://tempuri.org/Foo"'))).toBe(
      'Server did not recognize the value of HTTP Header SOAPAction: http://tempuri.org/Foo.',
    );
    expect(faultText(read(envelope(authCode), 'text/xml', ''))).toBe(
      'Server did not recognize the value of HTTP Header SOAPAction: .',
    );
    expect(
      faultText(
        read(envelope('<Foo xmlns="http://tempuri.org/"/>', S12), 'application/soap+xml; action="urn:x"'),
      ),
    ).toBe("Unable to handle request. The action 'urn:x' was not recognized.");
    expect(faultText(read(envelope('<Foo xmlns="http://tempuri.org/"/>', S12), 'application/soap+xml'))).toBe(
      'Unable to handle request without a valid action parameter. Please supply a valid soap action.',
    );
  });

  it('answers VersionMismatch for a foreign root, and 415 for SOAP 1.1 sent as application/soap+xml', () => {
    const foreign = read('<Envelope xmlns="urn:other"><Body/></Envelope>');
    expect(foreign).toMatchObject({ ok: false, code: 'VersionMismatch', version: '1.1' });
    expect(faultText(foreign)).toBe(
      `Possible SOAP version mismatch: Envelope namespace urn:other was unexpected. Expecting ${S11}.`,
    );
    // ASMX took SOAP 1.1 only as text/xml: 415, in SOAP 1.1, with or without a SOAPAction.
    for (const action of [undefined, `"${NS}AuthCode"`]) {
      const mixed = read(envelope(authCode), 'application/soap+xml; charset=utf-8', action);
      expect(mixed).toMatchObject({ ok: false, kind: 'unsupported-media-type', version: '1.1' });
      expect(faultText(mixed)).toBe(
        "415 A SOAP 1.1 envelope must be sent as text/xml; this one came as 'application/soap+xml; charset=utf-8'.",
      );
    }
  });

  it('faults on a missing Body and on a mustUnderstand header', () => {
    expect(faultText(read(`<soap:Envelope xmlns:soap="${S11}"><soap:Header/></soap:Envelope>`))).toBe(
      'Server was unable to read request. ---> Request format is invalid: Missing required soap:Body element.',
    );
    const mu = read(
      `<soap:Envelope xmlns:soap="${S11}"><soap:Header><Auth xmlns="urn:a" soap:mustUnderstand="1"/></soap:Header><soap:Body>${authCode}</soap:Body></soap:Envelope>`,
    );
    expect(mu).toMatchObject({
      ok: false,
      code: 'MustUnderstand',
      text: 'SOAP header Auth was not understood.',
    });
  });
});

describe('readSoapRequest: parameters', () => {
  it('matches by namespace not prefix, accepts unqualified parameters, ignores unknown ones', () => {
    const body = `<x:AuthCode xmlns:x="${NS}" xmlns:i="http://www.w3.org/2001/XMLSchema-instance" id="o0"><x:code i:type="d:string">12</x:code><phone>+447911123456</phone><other xmlns="urn:o">1</other><y:code xmlns:y="urn:y">evil</y:code></x:AuthCode>`;
    const r = read(envelope(body));
    expect(r.ok && Object.fromEntries(r.params)).toEqual({ code: '12', phone: '+447911123456' });
  });

  it('reads <p/> as empty, xsi:nil as absent, entities, character references and CDATA', () => {
    const body = `<AuthCode xmlns="${NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><code/><phone xsi:nil="true"/></AuthCode>`;
    const r = read(envelope(body));
    expect(r.ok && Object.fromEntries(r.params)).toEqual({ code: '' });
    const text = read(
      envelope(`<AuthCode xmlns="${NS}"><code>a&amp;&#66;&#x43;<![CDATA[<d>]]></code></AuthCode>`),
    );
    expect(text.ok && text.params.get('code')).toBe('a&BC<d>');
  });

  it('keeps __proto__ and constructor elements harmless', () => {
    const body = `<AuthCode xmlns="${NS}"><__proto__><polluted>1</polluted></__proto__><constructor>x</constructor><code __proto__="1">7</code></AuthCode>`;
    const r = read(envelope(body));
    expect(r.ok && Object.fromEntries(r.params)).toEqual({ code: '7' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('readSoapRequest: charset', () => {
  it('decodes the declared charset, a UTF-16 byte-order mark, and UTF-8 by default', () => {
    const xml = envelope(`<AuthCode xmlns="${NS}"><code>Zé1</code></AuthCode>`);
    const latin1 = Uint8Array.from(Buffer.from(xml, 'latin1'));
    expect(read(latin1, 'text/xml; charset=iso-8859-1')).toMatchObject({ ok: true });
    const r = read(latin1, 'text/xml; charset=iso-8859-1');
    expect(r.ok && r.params.get('code')).toBe('Zé1');
    const utf16 = Uint8Array.from([0xff, 0xfe, ...Buffer.from(xml, 'utf16le')]);
    const r16 = read(utf16, 'text/xml');
    expect(r16.ok && r16.params.get('code')).toBe('Zé1');
    const plain = read(xml, 'text/xml');
    expect(plain.ok && plain.params.get('code')).toBe('Zé1');
  });

  it('refuses bytes that are not in the charset with 400, and an unknown charset with 415', () => {
    expect(faultText(read(Uint8Array.from([0x3c, 0xff, 0xfe, 0x3e]), 'text/xml; charset=utf-8'))).toBe(
      '400 Server was unable to read request. ---> The request body is not valid utf-8.',
    );
    // In the version assumed from the headers: SOAP 1.1 here (text/xml with a SOAPAction).
    expect(read(envelope(authCode), 'text/xml; charset=klingon')).toMatchObject({
      ok: false,
      kind: 'unsupported-media-type',
      version: '1.1',
      text: "Unsupported charset 'klingon'. Send the request as utf-8.",
    });
  });
});

describe('readSoapRequest: hostile input', () => {
  it('refuses a DOCTYPE with an external entity without reading the file', () => {
    const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><soap:Envelope xmlns:soap="${S11}"><soap:Body><AuthCode xmlns="${NS}"><code>&x;</code></AuthCode></soap:Body></soap:Envelope>`;
    const r = read(xxe);
    expect(r).toMatchObject({ ok: false, kind: 'unreadable', version: '1.1' });
    expect(faultText(r)).toMatch(/^400 .*DOCTYPE and ENTITY declarations are not allowed.*line 1, column 22/);
    expect(JSON.stringify(r)).not.toContain('root:');
  });

  it('refuses billion laughs at once', () => {
    const lol = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ''};`.repeat(10)}">`).join('')}]><lolz>&lol9;</lolz>`;
    const started = performance.now();
    expect(read(lol)).toMatchObject({ ok: false, kind: 'unreadable' });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('bounds depth and element count', () => {
    const deep = envelope(`${'<a>'.repeat(100)}${'</a>'.repeat(100)}`);
    expect(faultText(read(deep))).toBe(
      '400 Server was unable to read request. ---> The message nests elements more than 32 deep.',
    );
    const wide = envelope(`<AuthCode xmlns="${NS}">${'<x/>'.repeat(5000)}</AuthCode>`);
    expect(faultText(read(wide))).toBe(
      '400 Server was unable to read request. ---> The message has more than 2000 elements.',
    );
  });

  it('says what and where XML is malformed, and refuses empty and non-XML bodies, all with 400', () => {
    expect(faultText(read(`<soap:Envelope xmlns:soap="${S11}"><soap:Body></soap:Envelope>`))).toMatch(
      /^400 Server was unable to read request\. ---> There is an error in XML document \(1, \d+\): /,
    );
    expect(faultText(read(''))).toBe('400 Server was unable to read request. ---> Root element is missing.');
    expect(faultText(read('hello'))).toMatch(
      /^400 Server was unable to read request\. ---> There is an error in XML document/,
    );
    // The version of the answer is the one assumed from the headers.
    expect(read('', 'application/soap+xml')).toMatchObject({ kind: 'unreadable', version: '1.2' });
    expect(readExactly('', 'text/xml', undefined)).toMatchObject({ kind: 'unreadable', version: '1.2' });
  });

  it('names the operation the headers call for, when the XML cannot be read (for the record)', () => {
    const truncated = envelope(authCode).slice(0, 120);
    const r11 = read(truncated);
    expect(r11).toMatchObject({ ok: false, kind: 'unreadable' });
    expect(!r11.ok && r11.kind === 'unreadable' ? r11.operation?.name : 'not unreadable').toBe('AuthCode');
    const r12 = read(truncated, `application/soap+xml; charset=utf-8; action="${NS}AuthCode"`, undefined);
    expect(!r12.ok && r12.kind === 'unreadable' ? r12.operation?.name : 'not unreadable').toBe('AuthCode');
    // An action of no operation names none.
    const none = read(truncated, 'text/xml; charset=utf-8', `"${NS}Nope"`);
    expect(!none.ok && none.kind === 'unreadable' ? none.operation : 'not unreadable').toBeUndefined();
  });

  it('answers 415 for content types that are not SOAP, naming the type for the record', () => {
    for (const type of ['application/json', '', 'text/plain']) {
      const r = read(envelope(authCode), type);
      expect(r).toMatchObject({ ok: false, kind: 'unsupported-media-type', version: undefined });
      expect(faultText(r)).toBe(
        `415 Unsupported Content-Type '${type}'. Send SOAP 1.1 as text/xml or SOAP 1.2 as application/soap+xml.`,
      );
    }
    expect(faultText(readExactly(envelope(authCode), undefined, `"${NS}AuthCode"`))).toBe(
      '415 The request has no Content-Type. Send SOAP 1.1 as text/xml or SOAP 1.2 as application/soap+xml.',
    );
  });
});
