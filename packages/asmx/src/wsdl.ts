import type { GroupDef } from '@school/contract';
import { soapActionOf } from './envelope.js';
import { escapeXml } from './xml.js';

/**
 * The group's WSDL in the document/literal wrapped shape ASMX generated (docs/wire-contract.md#wsdl),
 * so that .NET, Java, Python, PHP and C++ proxy generators read it as they read the original.
 * `groupUrl` is the absolute URL of the group, e.g. `http://host/AuthCodeSending.asmx`.
 */
export function renderWsdl(group: GroupDef, namespace: string, groupUrl: string): string {
  const ns = escapeXml(namespace);
  const url = escapeXml(groupUrl);
  const svc = group.name;
  const ops = group.operations;
  const out: string[] = [];
  const line = (depth: number, text: string) => out.push(`${'  '.repeat(depth)}${text}`);

  out.push('<?xml version="1.0" encoding="utf-8"?>');
  line(
    0,
    `<wsdl:definitions xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:tm="http://microsoft.com/wsdl/mime/textMatching/" xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:mime="http://schemas.xmlsoap.org/wsdl/mime/" xmlns:tns="${ns}" xmlns:s="http://www.w3.org/2001/XMLSchema" xmlns:soap12="http://schemas.xmlsoap.org/wsdl/soap12/" xmlns:http="http://schemas.xmlsoap.org/wsdl/http/" targetNamespace="${ns}" xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/">`,
  );

  line(1, '<wsdl:types>');
  line(2, `<s:schema elementFormDefault="qualified" targetNamespace="${ns}">`);
  for (const op of ops) {
    line(3, `<s:element name="${op.name}">`);
    if (op.params.length === 0) {
      line(4, '<s:complexType />');
    } else {
      line(4, '<s:complexType>');
      line(5, '<s:sequence>');
      for (const p of op.params) {
        line(6, `<s:element minOccurs="0" maxOccurs="1" name="${p.name}" type="s:string" />`);
      }
      line(5, '</s:sequence>');
      line(4, '</s:complexType>');
    }
    line(3, '</s:element>');
    line(3, `<s:element name="${op.name}Response">`);
    line(4, '<s:complexType />');
    line(3, '</s:element>');
  }
  line(2, '</s:schema>');
  line(1, '</wsdl:types>');

  // Messages grouped by protocol, as ASMX wrote them: all SOAP, then HttpGet, then HttpPost.
  for (const op of ops) {
    line(1, `<wsdl:message name="${op.name}SoapIn">`);
    line(2, `<wsdl:part name="parameters" element="tns:${op.name}" />`);
    line(1, '</wsdl:message>');
    line(1, `<wsdl:message name="${op.name}SoapOut">`);
    line(2, `<wsdl:part name="parameters" element="tns:${op.name}Response" />`);
    line(1, '</wsdl:message>');
  }
  for (const kind of ['HttpGet', 'HttpPost']) {
    for (const op of ops) {
      if (op.params.length === 0) {
        line(1, `<wsdl:message name="${op.name}${kind}In" />`);
      } else {
        line(1, `<wsdl:message name="${op.name}${kind}In">`);
        for (const p of op.params) line(2, `<wsdl:part name="${p.name}" type="s:string" />`);
        line(1, '</wsdl:message>');
      }
      line(1, `<wsdl:message name="${op.name}${kind}Out" />`);
    }
  }

  for (const [portType, suffix] of [
    ['Soap', 'Soap'],
    ['HttpGet', 'HttpGet'],
    ['HttpPost', 'HttpPost'],
  ] as const) {
    line(1, `<wsdl:portType name="${svc}${portType}">`);
    for (const op of ops) {
      line(2, `<wsdl:operation name="${op.name}">`);
      line(3, `<wsdl:input message="tns:${op.name}${suffix}In" />`);
      line(3, `<wsdl:output message="tns:${op.name}${suffix}Out" />`);
      line(2, '</wsdl:operation>');
    }
    line(1, '</wsdl:portType>');
  }

  for (const [binding, prefix] of [
    ['Soap', 'soap'],
    ['Soap12', 'soap12'],
  ] as const) {
    line(1, `<wsdl:binding name="${svc}${binding}" type="tns:${svc}Soap">`);
    line(2, `<${prefix}:binding transport="http://schemas.xmlsoap.org/soap/http" />`);
    for (const op of ops) {
      line(2, `<wsdl:operation name="${op.name}">`);
      line(
        3,
        `<${prefix}:operation soapAction="${escapeXml(soapActionOf(namespace, op.name))}" style="document" />`,
      );
      for (const dir of ['input', 'output']) {
        line(3, `<wsdl:${dir}>`);
        line(4, `<${prefix}:body use="literal" />`);
        line(3, `</wsdl:${dir}>`);
      }
      line(2, '</wsdl:operation>');
    }
    line(1, '</wsdl:binding>');
  }
  for (const [binding, verb] of [
    ['HttpGet', 'GET'],
    ['HttpPost', 'POST'],
  ] as const) {
    line(1, `<wsdl:binding name="${svc}${binding}" type="tns:${svc}${binding}">`);
    line(2, `<http:binding verb="${verb}" />`);
    for (const op of ops) {
      line(2, `<wsdl:operation name="${op.name}">`);
      line(3, `<http:operation location="/${op.name}" />`);
      line(3, '<wsdl:input>');
      line(
        4,
        verb === 'GET' ? '<http:urlEncoded />' : '<mime:content type="application/x-www-form-urlencoded" />',
      );
      line(3, '</wsdl:input>');
      line(3, '<wsdl:output />');
      line(2, '</wsdl:operation>');
    }
    line(1, '</wsdl:binding>');
  }

  line(1, `<wsdl:service name="${svc}">`);
  for (const [port, prefix] of [
    ['Soap', 'soap'],
    ['Soap12', 'soap12'],
    ['HttpGet', 'http'],
    ['HttpPost', 'http'],
  ] as const) {
    line(2, `<wsdl:port name="${svc}${port}" binding="tns:${svc}${port}">`);
    line(3, `<${prefix}:address location="${url}" />`);
    line(2, '</wsdl:port>');
  }
  line(1, '</wsdl:service>');
  line(0, '</wsdl:definitions>');
  return out.join('\r\n');
}

/** The group's DISCO document, as ASMX answered `?disco`. */
export function renderDisco(group: GroupDef, namespace: string, groupUrl: string): string {
  const ns = escapeXml(namespace);
  const url = escapeXml(groupUrl);
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<discovery xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.xmlsoap.org/disco/">',
    `  <contractRef ref="${url}?wsdl" docRef="${url}" xmlns="http://schemas.xmlsoap.org/disco/scl/" />`,
    `  <soap address="${url}" xmlns:q1="${ns}" binding="q1:${group.name}Soap" xmlns="http://schemas.xmlsoap.org/disco/soap/" />`,
    `  <soap address="${url}" xmlns:q2="${ns}" binding="q2:${group.name}Soap12" xmlns="http://schemas.xmlsoap.org/disco/soap/" />`,
    '</discovery>',
  ].join('\r\n');
}
