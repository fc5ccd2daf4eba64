import type { OperationDef } from '@school/contract';
import { bindingOfSoapVersion, SOAP_VERSIONS, type WireBinding } from './binding.js';
import {
  envelopeNamespace,
  type SoapVersion,
  soapActionOf,
  soapContentType,
  successEnvelope,
} from './envelope.js';
import { escapeXml } from './xml.js';

// Re-exported for the console, which imports this module alone (`@school/asmx/samples`).
export { WIRE_BINDINGS, type WireBinding } from './binding.js';

export interface SampleOptions {
  readonly groupPath: string;
  readonly namespace: string;
  /** The Host header shown in the request. */
  readonly host: string;
  /**
   * Values to put in the request. Without them, each parameter shows the placeholder `string`
   * and Content-Length shows `length`, as ASMX help pages did.
   */
  readonly values?: Readonly<Record<string, string>>;
}

export interface Sample {
  /** The whole HTTP request: request line, headers, blank line, body. */
  readonly request: string;
  /** The response a successful call gets. */
  readonly response: string;
  /** The request's body alone ('' for GET). */
  readonly body: string;
  readonly method: 'GET' | 'POST';
  /** Path and query. */
  readonly path: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

const byteLength = (text: string): number => new TextEncoder().encode(text).length;

/** The SOAP request body for an operation, indented as ASMX help pages show it. */
export function soapRequestBody(
  version: SoapVersion,
  op: OperationDef,
  namespace: string,
  values?: Readonly<Record<string, string>>,
): string {
  const params = op.params
    .map((p) => `      <${p.name}>${escapeXml(values ? (values[p.name] ?? '') : 'string')}</${p.name}>\n`)
    .join('');
  const opElement = params
    ? `    <${op.name} xmlns="${escapeXml(namespace)}">\n${params}    </${op.name}>\n`
    : `    <${op.name} xmlns="${escapeXml(namespace)}" />\n`;
  return (
    '<?xml version="1.0" encoding="utf-8"?>\n' +
    `<soap:Envelope xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:soap="${envelopeNamespace(version)}">\n` +
    `  <soap:Body>\n${opElement}  </soap:Body>\n</soap:Envelope>`
  );
}

/** `name=value&…` for the HTTP GET query and HTTP POST form. */
export function formEncode(op: OperationDef, values?: Readonly<Record<string, string>>): string {
  return op.params
    .map((p) => `${p.name}=${values ? encodeURIComponent(values[p.name] ?? '') : 'string'}`)
    .join('&');
}

function message(startLine: string, headers: ReadonlyArray<readonly [string, string]>, body: string): string {
  const head = [startLine, ...headers.map(([k, v]) => `${k}: ${v}`)].join('\n');
  return body ? `${head}\n\n${body}` : head;
}

/** The exact request of each binding for an operation, and the success response it gets. */
export function samples(op: OperationDef, options: SampleOptions): Record<WireBinding, Sample> {
  const { groupPath, namespace, host, values } = options;
  const length = (body: string): string => (values ? String(byteLength(body)) : 'length');
  const result = {} as Record<WireBinding, Sample>;

  for (const version of SOAP_VERSIONS) {
    const body = soapRequestBody(version, op, namespace, values);
    const action = soapActionOf(namespace, op.name);
    const headers: [string, string][] = [
      ['Host', host],
      ['Content-Type', soapContentType(version)],
      ['Content-Length', length(body)],
    ];
    if (version === '1.1') headers.push(['SOAPAction', `"${action}"`]);
    const response = successEnvelope(version, op.name, namespace);
    result[bindingOfSoapVersion(version)] = {
      method: 'POST',
      path: groupPath,
      headers,
      body,
      request: message(`POST ${groupPath} HTTP/1.1`, headers, body),
      response: message(
        'HTTP/1.1 200 OK',
        [
          ['Content-Type', soapContentType(version)],
          ['Content-Length', String(byteLength(response))],
        ],
        response,
      ),
    };
  }

  const form = formEncode(op, values);
  const getPath = `${groupPath}/${op.name}${form ? `?${form}` : ''}`;
  const getHeaders: [string, string][] = [['Host', host]];
  result['http-get'] = {
    method: 'GET',
    path: getPath,
    headers: getHeaders,
    body: '',
    request: message(`GET ${getPath} HTTP/1.1`, getHeaders, ''),
    response: 'HTTP/1.1 200 OK',
  };
  const postPath = `${groupPath}/${op.name}`;
  const postHeaders: [string, string][] = [
    ['Host', host],
    ['Content-Type', 'application/x-www-form-urlencoded'],
    ['Content-Length', length(form)],
  ];
  result['http-post'] = {
    method: 'POST',
    path: postPath,
    headers: postHeaders,
    body: form,
    request: message(`POST ${postPath} HTTP/1.1`, postHeaders, form),
    response: 'HTTP/1.1 200 OK',
  };
  return result;
}
