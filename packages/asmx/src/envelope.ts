import { escapeXml, escapeXmlText } from './xml.js';

export type SoapVersion = '1.1' | '1.2';

export const SOAP11_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
export const SOAP12_ENV = 'http://www.w3.org/2003/05/soap-envelope';
export const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
export const XSD_NS = 'http://www.w3.org/2001/XMLSchema';

export const envelopeNamespace = (version: SoapVersion): string =>
  version === '1.1' ? SOAP11_ENV : SOAP12_ENV;

/**
 * An operation's SOAP action as ASMX derived it: namespace + name, with a `/` between them when
 * the namespace does not end in one (SoapReflector.GetDefaultAction).
 */
export const soapActionOf = (namespace: string, operation: string): string =>
  namespace.endsWith('/') ? `${namespace}${operation}` : `${namespace}/${operation}`;

/** The reply's Content-Type for a SOAP version (docs/wire-contract.md#soap-success-answers). */
export const soapContentType = (version: SoapVersion): string =>
  version === '1.1' ? 'text/xml; charset=utf-8' : 'application/soap+xml; charset=utf-8';

/** SOAP 1.1 fault codes; SOAP 1.2 maps Client to Sender and Server to Receiver. */
export type FaultCode = 'Client' | 'Server' | 'VersionMismatch' | 'MustUnderstand';

const SOAP12_CODES: Record<FaultCode, string> = {
  Client: 'Sender',
  Server: 'Receiver',
  VersionMismatch: 'VersionMismatch',
  MustUnderstand: 'MustUnderstand',
};

const open = (version: SoapVersion): string =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${envelopeNamespace(version)}" xmlns:xsi="${XSI_NS}" xmlns:xsd="${XSD_NS}">`;
const BODY = '<soap:Body>';
const CLOSE = '</soap:Body></soap:Envelope>';

/**
 * The SOAP 1.2 `Upgrade` header ASMX put in every VersionMismatch fault when SOAP 1.2 was enabled
 * (SoapServerProtocol.CreateUpgradeHeader), listing the envelopes it takes, byte for byte as its
 * XmlWriter wrote the element: the `soap12` prefix declared on `Upgrade`, each
 * `SupportedEnvelope` with its `qname` and then its own namespace declaration.
 */
const UPGRADE_HEADER = `<soap:Header><soap12:Upgrade xmlns:soap12="${SOAP12_ENV}"><soap12:SupportedEnvelope qname="soap:Envelope" xmlns:soap="${SOAP11_ENV}" /><soap12:SupportedEnvelope qname="soap12:Envelope" xmlns:soap12="${SOAP12_ENV}" /></soap12:Upgrade></soap:Header>`;

/**
 * The success envelope: one empty `{Op}Response` element, byte for byte as ASMX wrote it
 * (docs/wire-contract.md#soap-success-answers). Callers cache the result; it depends only on its arguments.
 */
export function successEnvelope(version: SoapVersion, operation: string, namespace: string): string {
  return `${open(version)}${BODY}<${operation}Response xmlns="${escapeXml(namespace)}" />${CLOSE}`;
}

/**
 * A fault envelope in the reply's version, as ASMX wrote it (docs/faults.md#fault-envelopes):
 * unqualified faultcode/faultstring/detail in 1.1; a VersionMismatch fault carries the `Upgrade`
 * header; a MustUnderstand fault (ASMX's SoapHeaderException) has no detail element.
 */
export function faultEnvelope(version: SoapVersion, code: FaultCode, text: string): string {
  const detail = code === 'MustUnderstand' ? '' : version === '1.1' ? '<detail />' : '<soap:Detail />';
  const body =
    version === '1.1'
      ? `<soap:Fault><faultcode>soap:${code}</faultcode><faultstring>${escapeXmlText(text)}</faultstring>${detail}</soap:Fault>`
      : `<soap:Fault><soap:Code><soap:Value>soap:${SOAP12_CODES[code]}</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">${escapeXmlText(text)}</soap:Text></soap:Reason>${detail}</soap:Fault>`;
  const header = code === 'VersionMismatch' ? UPGRADE_HEADER : '';
  return `${open(version)}${header}${BODY}${body}${CLOSE}`;
}
