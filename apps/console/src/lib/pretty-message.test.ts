import { describe, expect, it } from 'vitest';
import { prettyHttpMessage, prettyXml } from './pretty-message';

describe('prettyXml', () => {
  it('puts one element per line, indented, text beside its element', () => {
    const xml =
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone /></AuthCode></soap:Body></soap:Envelope>';
    expect(prettyXml(xml)).toBe(
      [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">',
        '  <soap:Body>',
        '    <AuthCode xmlns="http://tempuri.org/">',
        '      <code>4821</code>',
        '      <phone />',
        '    </AuthCode>',
        '  </soap:Body>',
        '</soap:Envelope>',
      ].join('\n'),
    );
  });

  it('keeps ">" inside attribute values, comments and CDATA', () => {
    expect(prettyXml('<a t="x>y"><!-- c > d --><b><![CDATA[<not a tag>]]></b></a>')).toBe(
      ['<a t="x>y">', '  <!-- c > d -->', '  <b><![CDATA[<not a tag>]]></b>', '</a>'].join('\n'),
    );
  });

  it('copes with a body cut at the size cap', () => {
    expect(prettyXml('<a><b>text</b><c attr="unfinished')).toBe(
      ['<a>', '  <b>text</b>', '  <c attr="unfinished'].join('\n'),
    );
  });

  it('leaves what is not XML alone', () => {
    expect(prettyXml('Missing parameter: phone.')).toBe('Missing parameter: phone.');
  });
});

describe('prettyHttpMessage', () => {
  it('indents an XML or JSON body and keeps the head as it was', () => {
    expect(prettyHttpMessage('HTTP/1.1 200\nContent-Type: text/xml\n\n<a><b>1</b></a>')).toBe(
      'HTTP/1.1 200\nContent-Type: text/xml\n\n<a>\n  <b>1</b>\n</a>',
    );
    expect(prettyHttpMessage('POST /api/operations/AuthCode HTTP/1.1\r\n\r\n{"code":"***"}')).toBe(
      'POST /api/operations/AuthCode HTTP/1.1\n\n{\n  "code": "***"\n}',
    );
  });

  it('returns a plain-text body unchanged', () => {
    const message = 'HTTP/1.1 400\nContent-Type: text/plain\n\nMissing parameter: phone.';
    expect(prettyHttpMessage(message)).toBe(message);
  });
});
