import { findGroup, type GroupDef, type OperationDef, operationByName } from '@school/contract';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import {
  faultEnvelope,
  htmlEncode,
  httpErrorBody,
  invalidMethodNameText,
  maskRequestBody,
  maskRequestText,
  maskXmlElements,
  methodNameCaseText,
  renderDisco,
  renderHelpIndex,
  renderHelpOperation,
  renderHelpUnknownOperation,
  renderWsdl,
  requestFormatText,
  samples,
  soapRefusalAnswer,
  successEnvelope,
} from '../src/index.js';

const NS = 'http://tempuri.org/';
const group = (name: string) => findGroup(name) as GroupDef;
const op = (name: string) => operationByName(name) as OperationDef;

describe('envelopes', () => {
  it('writes the success bytes ASMX wrote', () => {
    expect(successEnvelope('1.1', 'AuthCode', NS)).toBe(
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCodeResponse xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>',
    );
    expect(successEnvelope('1.2', 'pushNoti', NS)).toBe(
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><pushNotiResponse xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>',
    );
  });

  it('escapes fault texts and maps codes to SOAP 1.2', () => {
    expect(faultEnvelope('1.1', 'Client', 'a <b> & "c"')).toContain(
      '<faultcode>soap:Client</faultcode><faultstring>a &lt;b&gt; &amp; "c"</faultstring><detail />',
    );
    expect(faultEnvelope('1.2', 'Server', 'x')).toContain(
      '<soap:Code><soap:Value>soap:Receiver</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">x</soap:Text></soap:Reason><soap:Detail />',
    );
  });

  it('puts the Upgrade header in a VersionMismatch fault, in either version', () => {
    const upgrade =
      '<soap:Header><soap12:Upgrade xmlns:soap12="http://www.w3.org/2003/05/soap-envelope"><soap12:SupportedEnvelope qname="soap:Envelope" xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" /><soap12:SupportedEnvelope qname="soap12:Envelope" xmlns:soap12="http://www.w3.org/2003/05/soap-envelope" /></soap12:Upgrade></soap:Header><soap:Body>';
    for (const version of ['1.1', '1.2'] as const) {
      const xml = faultEnvelope(version, 'VersionMismatch', 'x');
      expect(xml).toContain(`xmlns:xsd="http://www.w3.org/2001/XMLSchema">${upgrade}<soap:Fault>`);
      expect(XMLValidator.validate(xml)).toBe(true);
    }
    expect(faultEnvelope('1.1', 'Client', 'x')).not.toContain('Upgrade');
  });

  it('writes no detail in a MustUnderstand fault, as ASMX wrote a SoapHeaderException', () => {
    expect(faultEnvelope('1.1', 'MustUnderstand', 'x')).toContain(
      '<faultcode>soap:MustUnderstand</faultcode><faultstring>x</faultstring></soap:Fault>',
    );
    expect(faultEnvelope('1.2', 'MustUnderstand', 'x')).toContain(
      '<soap:Text xml:lang="en">x</soap:Text></soap:Reason></soap:Fault>',
    );
  });
});

describe('refusals on the wire', () => {
  it('answers 500 with a fault, and 400 and 415 with an empty body, as ASMX did', () => {
    expect(
      soapRefusalAnswer({ ok: false, kind: 'fault', version: '1.2', code: 'Client', text: 'x' }),
    ).toEqual({
      status: 500,
      contentType: 'application/soap+xml; charset=utf-8',
      body: faultEnvelope('1.2', 'Client', 'x'),
    });
    expect(soapRefusalAnswer({ ok: false, kind: 'unreadable', version: '1.1', text: 'x' })).toEqual({
      status: 400,
      contentType: 'text/xml; charset=utf-8',
      body: '',
    });
    expect(soapRefusalAnswer({ ok: false, kind: 'unreadable', version: '1.2', text: 'x' })).toEqual({
      status: 400,
      contentType: 'application/soap+xml; charset=utf-8',
      body: '',
    });
    // No version when the media type named none: text/xml.
    expect(
      soapRefusalAnswer({ ok: false, kind: 'unsupported-media-type', version: undefined, text: 'x' }),
    ).toEqual({ status: 415, contentType: 'text/xml; charset=utf-8', body: '' });
  });

  it("writes the HTTP bindings' errors as ASMX did: HTML-encoded, then CRLF", () => {
    expect(htmlEncode(`<a href="x">'&'</a> \u00a0é ÿ Ā 日`)).toBe(
      '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt; &#160;&#233; &#255; Ā 日',
    );
    expect(httpErrorBody('Missing parameter: code.')).toBe('Missing parameter: code.\r\n');
    expect(invalidMethodNameText('<b>')).toBe('&lt;b&gt; Web Service method name is not valid.');
    expect(methodNameCaseText('authcode', 'AuthCode')).toBe(
      'Invalid method name &#39;authcode&#39;,  method names are case sensitive.   The method name &#39;AuthCode&#39; with the same name but different casing was found.\r\nParameter name: methodName',
    );
    expect(requestFormatText('text/xml; charset="utf-8"')).toBe(
      'Request format is invalid: text/xml; charset=&quot;utf-8&quot;.',
    );
  });
});

describe('WSDL', () => {
  const parse = (xml: string) =>
    new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '',
      isArray: (_name: string, _path: unknown, _leaf: boolean, isAttribute: boolean) => !isAttribute,
    }).parse(xml);

  it('is well-formed and has the ASMX shape for every group', () => {
    for (const name of ['AuthCodeSending', 'BookPdf', 'NotificationNotes', 'PushNotificationMobile']) {
      const g = group(name);
      const xml = renderWsdl(g, NS, `http://h${g.path}`);
      expect(XMLValidator.validate(xml)).toBe(true);
      const defs = parse(xml)['wsdl:definitions'][0];
      expect(defs.targetNamespace).toBe(NS);
      expect(defs['wsdl:portType'].map((p: { name: string }) => p.name)).toEqual([
        `${name}Soap`,
        `${name}HttpGet`,
        `${name}HttpPost`,
      ]);
      expect(defs['wsdl:binding'].map((b: { name: string }) => b.name)).toEqual([
        `${name}Soap`,
        `${name}Soap12`,
        `${name}HttpGet`,
        `${name}HttpPost`,
      ]);
      const ports = defs['wsdl:service'][0]['wsdl:port'];
      expect(ports.map((p: { name: string }) => p.name)).toEqual([
        `${name}Soap`,
        `${name}Soap12`,
        `${name}HttpGet`,
        `${name}HttpPost`,
      ]);
      for (const o of g.operations) {
        expect(xml).toContain(`soapAction="${NS}${o.name}" style="document"`);
        expect(xml).toContain(`<http:operation location="/${o.name}" />`);
      }
    }
  });

  it('declares every parameter as an optional string, and an empty type for pushNoti', () => {
    const xml = renderWsdl(group('NotificationNotes'), NS, 'http://h/NotificationNotes.asmx');
    expect(xml).toContain('<s:element minOccurs="0" maxOccurs="1" name="TypeNotfication" type="s:string" />');
    const push = renderWsdl(group('PushNotificationMobile'), NS, 'http://h/PushNotificationMobile.asmx');
    expect(push).toMatch(/<s:element name="pushNoti">\s*<s:complexType \/>\s*<\/s:element>/);
    expect(push).toContain('<wsdl:message name="pushNotiHttpGetOut" />');
  });

  it('escapes the namespace and the address', () => {
    const xml = renderWsdl(group('BookPdf'), 'urn:a&b', 'http://h/BookPdf.asmx?"x"');
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).toContain('targetNamespace="urn:a&amp;b"');
  });

  it('writes a DISCO document pointing at the WSDL and both SOAP bindings', () => {
    const disco = renderDisco(group('BookPdf'), NS, 'http://h/BookPdf.asmx');
    expect(XMLValidator.validate(disco)).toBe(true);
    expect(disco).toContain('ref="http://h/BookPdf.asmx?wsdl"');
    expect(disco).toContain('binding="q2:BookPdfSoap12"');
  });
});

describe('help pages', () => {
  it('lists operations sorted, with links to their pages and the WSDL', () => {
    const html = renderHelpIndex(group('NotificationNotes'));
    expect(html.indexOf('SendMarkNotes')).toBeLessThan(html.indexOf('SendNotificationType'));
    expect(html).toContain('href="/NotificationNotes.asmx?op=SendMarkNotes"');
    expect(html).toContain('href="/NotificationNotes.asmx?WSDL"');
  });

  it('shows all four samples and a test form on an operation page', () => {
    const html = renderHelpOperation(group('AuthCodeSending'), op('AuthCode'), NS, 'example.org');
    for (const title of ['SOAP 1.1', 'SOAP 1.2', 'HTTP GET', 'HTTP POST'])
      expect(html).toContain(`<h2>${title}</h2>`);
    expect(html).toContain('SOAPAction: &quot;http://tempuri.org/AuthCode&quot;');
    expect(html).toContain('GET /AuthCodeSending.asmx/AuthCode?code=string&amp;phone=string HTTP/1.1');
    expect(html).toContain('<form target="_blank" action="/AuthCodeSending.asmx/AuthCode" method="POST">');
    expect(html).toContain('name="phone"');
  });

  it('escapes what came from the request', () => {
    const html = renderHelpUnknownOperation(group('BookPdf'), '<script>alert(1)</script>');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    const page = renderHelpOperation(group('BookPdf'), op('GetBookPdfByTerm'), NS, '"><script>');
    expect(page).not.toContain('"><script>');
  });
});

describe('samples', () => {
  it('renders the exact requests for given values, with real lengths', () => {
    const s = samples(op('AuthCode'), {
      groupPath: '/AuthCodeSending.asmx',
      namespace: NS,
      host: 'h',
      values: { code: '12', phone: '+44 7911&' },
    });
    expect(s['http-get'].path).toBe('/AuthCodeSending.asmx/AuthCode?code=12&phone=%2B44%207911%26');
    expect(s['http-post'].body).toBe('code=12&phone=%2B44%207911%26');
    expect(s.soap11.body).toContain('<phone>+44 7911&amp;</phone>');
    expect(s.soap11.headers).toContainEqual(['Content-Length', String(Buffer.byteLength(s.soap11.body))]);
    expect(s.soap12.headers.find(([k]) => k === 'SOAPAction')).toBeUndefined();
  });
});

describe('masking', () => {
  it('masks secret elements and form fields, whatever the prefix or case', () => {
    expect(maskXmlElements('<n:code a="1">4821</n:code><phone>1</phone><code/>', ['code'])).toBe(
      '<n:code a="1">***</n:code><phone>1</phone><code/>',
    );
    expect(maskRequestBody('CODE=4821&phone=%2B1&code', ['code'])).toBe('CODE=***&phone=%2B1&code');
    expect(maskRequestText('/A.asmx/AuthCode?code=1&phone=2', ['code'])).toBe(
      '/A.asmx/AuthCode?code=***&phone=2',
    );
    expect(maskRequestText('/A.asmx/AuthCode', ['code'])).toBe('/A.asmx/AuthCode');
  });
});

describe('SOAP actions', () => {
  it('joins a namespace without a trailing slash with one, as ASMX did', async () => {
    const { soapActionOf, readSoapRequest } = await import('../src/index.js');
    expect(soapActionOf('http://tempuri.org/', 'AuthCode')).toBe('http://tempuri.org/AuthCode');
    expect(soapActionOf('http://school.example.org/ws', 'AuthCode')).toBe(
      'http://school.example.org/ws/AuthCode',
    );
    const ns = 'http://school.example.org/ws';
    const wsdl = renderWsdl(group('AuthCodeSending'), ns, 'http://h/AuthCodeSending.asmx');
    expect(wsdl).toContain('soapAction="http://school.example.org/ws/AuthCode"');
    const body = new TextEncoder().encode(
      `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><AuthCode xmlns="${ns}"/></s:Body></s:Envelope>`,
    );
    const read = (soapAction: string) =>
      readSoapRequest({
        body,
        contentType: 'text/xml',
        soapAction,
        group: group('AuthCodeSending'),
        namespace: ns,
      });
    expect(read(`"${ns}/AuthCode"`).ok).toBe(true);
    expect(read(`"${ns}AuthCode"`).ok).toBe(false);
  });

  it('writes messages grouped by protocol', () => {
    const xml = renderWsdl(group('NotificationNotes'), NS, 'http://h/NotificationNotes.asmx');
    const names = [...xml.matchAll(/<wsdl:message name="(\w+)"/g)].map((m) => m[1]);
    expect(names.slice(0, 6)).toEqual([
      'SendNotificationTypeSoapIn',
      'SendNotificationTypeSoapOut',
      'SendMarkNotesSoapIn',
      'SendMarkNotesSoapOut',
      'SendNotificationTypeHttpGetIn',
      'SendNotificationTypeHttpGetOut',
    ]);
  });
});
