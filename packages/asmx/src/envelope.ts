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
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${envelopeNamespace(version)}" xmlns:xsi="${XSI_NS}" xmlns:xsd="${XSD_NS}"><soap:Body>`;
const CLOSE = '</soap:Body></soap:Envelope>';

/**
 * The success envelope: one empty `{Op}Response` element, byte for byte as ASMX wrote it
 * (docs/wire-contract.md#soap-success-answers). Callers cache the result; it depends only on its arguments.
 */
export function successEnvelope(version: SoapVersion, operation: string, namespace: string): string {
  return `${open(version)}<${operation}Response xmlns="${escapeXml(namespace)}" />${CLOSE}`;
}

/** A fault envelope in the reply's version, with unqualified faultcode/faultstring/detail in 1.1. */
export function faultEnvelope(version: SoapVersion, code: FaultCode, text: string): string {
  const body =
    version === '1.1'
      ? `<soap:Fault><faultcode>soap:${code}</faultcode><faultstring>${escapeXmlText(text)}</faultstring><detail /></soap:Fault>`
      : `<soap:Fault><soap:Code><soap:Value>soap:${SOAP12_CODES[code]}</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">${escapeXmlText(text)}</soap:Text></soap:Reason><soap:Detail /></soap:Fault>`;
  return `${open(version)}${body}${CLOSE}`;
}
