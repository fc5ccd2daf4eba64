import { findOperation, type GroupDef, type OperationDef } from '@school/contract';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { attributeBreach } from './attribute-limits.js';
import { parseContentType } from './content-type.js';
import {
  type FaultCode,
  faultEnvelope,
  SOAP11_ENV,
  SOAP12_ENV,
  type SoapVersion,
  soapActionOf,
  soapContentType,
  XSI_NS,
} from './envelope.js';
import { scanEnvelope } from './fast-envelope.js';
import { type Element, elementView, ROOT_SCOPE, type Scope, scopeOf } from './xml-view.js';

export interface SoapLimits {
  /** Deepest element nesting accepted. */
  readonly maxDepth: number;
  /** Most elements accepted in one message. */
  readonly maxElements: number;
  /** Most attributes accepted on one element, namespace declarations included. */
  readonly maxAttributesPerElement: number;
  /** Most attributes accepted in one message (attribute-limits.ts). */
  readonly maxAttributes: number;
  /**
   * Most entity and character references (`&amp;`, `&#233;`, …) accepted in one message: every
   * `&` counts, wherever it is (countReferences).
   */
  readonly maxReferences: number;
  /**
   * Longest message (in characters) read in a shape the one-pass reader declines (a comment,
   * CDATA, a processing instruction, a reference, a carriage return…: fast-envelope.ts). The
   * general reader's work on the event loop grows with each character, faster with references:
   * forty messages at the .asmx body cap at once held every other request up
   * (docs/performance.md, `bench/hostile-requests.mjs`). A real client's message is a few KB in
   * either shape.
   */
  readonly maxGeneralChars: number;
}

export const DEFAULT_SOAP_LIMITS: SoapLimits = {
  maxDepth: 32,
  maxElements: 2000,
  maxAttributesPerElement: 256,
  maxAttributes: 8000,
  // A client writing every character of three 1024-character parameters as a reference (an ASCII
  // writer's `&#…;`) sends 3072: room to spare, for headers too (docs/compatibility.md).
  maxReferences: 8000,
  maxGeneralChars: 16 * 1024,
};

export interface SoapRequestInput {
  readonly body: Uint8Array;
  readonly contentType: string | undefined;
  /** The SOAPAction header as sent, or undefined when there was none. */
  readonly soapAction: string | undefined;
  readonly group: GroupDef;
  readonly namespace: string;
  readonly limits?: SoapLimits;
}

export type SoapRequest =
  | {
      readonly ok: true;
      readonly version: SoapVersion;
      readonly operation: OperationDef;
      /** Parameters by name; an absent or `xsi:nil` parameter is not in the map. */
      readonly params: ReadonlyMap<string, string>;
      /** The decoded message, for the call record. */
      readonly xml: string;
    }
  | SoapRefusal;

/**
 * A SOAP request refused before its operation ran, in the three kinds ASMX's
 * `SoapServerProtocolHelper.SetResponseErrorCode` told apart (docs/faults.md#soap-faults-by-case).
 * `text` is the precise reason, for the call record; only a `fault` puts it on the wire.
 */
export type SoapRefusal =
  | {
      /** Answered `500` with a fault envelope. */
      readonly ok: false;
      readonly kind: 'fault';
      readonly version: SoapVersion;
      readonly code: FaultCode;
      readonly text: string;
      /** The operation, when it was identified before the fault. */
      readonly operation?: OperationDef;
      /** The decoded message, when it could be decoded. */
      readonly xml?: string;
    }
  | {
      /** The XML could not be read (ASMX: an XmlException in the chain): `400`, empty body. */
      readonly ok: false;
      readonly kind: 'unreadable';
      /** The version assumed from the headers (docs/bindings.md#before-the-envelope-is-read). */
      readonly version: SoapVersion;
      readonly text: string;
      /**
       * The operation the headers name (SOAP 1.1's SOAPAction, SOAP 1.2's `action`), for the
       * record: what the caller meant to call, though its XML could not be read.
       */
      readonly operation?: OperationDef;
      readonly xml?: string;
    }
  | {
      /** A media type or charset not taken (ASMX: the UnsupportedMediaType subcode): `415`, empty body. */
      readonly ok: false;
      readonly kind: 'unsupported-media-type';
      /** The version the answer is in; undefined when the media type names none. */
      readonly version: SoapVersion | undefined;
      readonly text: string;
      readonly xml?: string;
    };

/** A refusal as it goes on the wire: status, Content-Type and body. */
export interface SoapRefusalAnswer {
  readonly status: 400 | 415 | 500;
  readonly contentType: string;
  /** The fault envelope, or '' for 400 and 415. */
  readonly body: string;
}

/**
 * How ASMX answered a refusal: `SetResponseErrorCode` chose the status (`400` for unreadable XML,
 * `415` for a media type, `500` for every other fault) and `WriteFault` wrote an envelope only
 * with `500`. The Content-Type is the version's (`text/xml; charset=utf-8` when there is none).
 */
export function soapRefusalAnswer(refusal: SoapRefusal): SoapRefusalAnswer {
  const contentType = soapContentType(refusal.version ?? '1.1');
  switch (refusal.kind) {
    case 'fault': {
      // ASMX answers a VersionMismatch as SOAP 1.1 whatever the request claimed
      // (SoapServerProtocol.CheckHelperVersion): its text expects the 1.1 envelope.
      const version = refusal.code === 'VersionMismatch' ? '1.1' : refusal.version;
      return {
        status: 500,
        contentType: soapContentType(version),
        body: faultEnvelope(version, refusal.code, refusal.text),
      };
    }
    case 'unreadable':
      return { status: 400, contentType, body: '' };
    case 'unsupported-media-type':
      return { status: 415, contentType, body: '' };
  }
}

// fast-xml-parser's ordered output: each node is `{ [tagName]: children, ':@'?: attributes }`.
type XmlNode = Record<string, unknown>;
type Attrs = Record<string, string>;
const ATTRS = ':@';
const TEXT = '#text';
const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);
// Reserved names would be refused by the parser; renamed, they match nothing and are ignored.
const defuse = (name: string): string => (RESERVED.has(name) ? `!${name}` : name);

const XML_ENTITIES = { amp: '&', apos: "'", gt: '>', lt: '<', quot: '"' };
const parsers = new Map<number, XMLParser>();
function parserFor(maxDepth: number): XMLParser {
  let parser = parsers.get(maxDepth);
  if (!parser) {
    parser = new XMLParser({
      preserveOrder: true,
      ignoreAttributes: false,
      attributeNamePrefix: '',
      // The five XML entities and character references; anything else stays as written.
      // (typed as boolean, but an entity table is accepted and also turns on `&#…;` references)
      htmlEntities: XML_ENTITIES as unknown as boolean,
      parseTagValue: false,
      parseAttributeValue: false,
      trimValues: false,
      ignoreDeclaration: true,
      ignorePiTags: true,
      maxNestedTags: maxDepth,
      // Callbacks get a matcher rather than a path string built for every tag.
      jPath: false,
      transformTagName: defuse,
      transformAttributeName: defuse,
    });
    parsers.set(maxDepth, parser);
  }
  return parser;
}

const READ_FAILED = 'Server was unable to read request. ---> ';
const SEND_AS = 'Send SOAP 1.1 as text/xml or SOAP 1.2 as application/soap+xml.';

/**
 * Reads a SOAP request into version, operation and parameters, or into the refusal ASMX would
 * have answered (docs/bindings.md, docs/faults.md). Never throws on input.
 */
export function readSoapRequest(input: SoapRequestInput): SoapRequest {
  const limits = input.limits ?? DEFAULT_SOAP_LIMITS;
  const contentType = parseContentType(input.contentType);
  const isSoap12Type = contentType.mediaType === 'application/soap+xml';
  if (!isSoap12Type && contentType.mediaType !== 'text/xml') {
    return {
      ok: false,
      kind: 'unsupported-media-type',
      version: undefined,
      text:
        input.contentType === undefined
          ? `The request has no Content-Type. ${SEND_AS}`
          : `Unsupported Content-Type '${input.contentType}'. ${SEND_AS}`,
    };
  }
  // SOAP 1.2 is assumed without a SOAPAction header or with application/soap+xml
  // (docs/bindings.md#before-the-envelope-is-read).
  const assumed: SoapVersion = isSoap12Type || input.soapAction === undefined ? '1.2' : '1.1';
  let xml: string | undefined;
  const withXml = () => (xml === undefined ? {} : { xml });
  const fault = (code: FaultCode, text: string, version: SoapVersion = assumed): SoapRequest => ({
    ok: false,
    kind: 'fault',
    version,
    code,
    text,
    ...withXml(),
  });
  // Everything that stops the XML being read is one kind of answer: 400, empty body.
  const unreadable = (reason: string): SoapRequest => {
    const action =
      input.soapAction !== undefined ? unquote(input.soapAction) : contentType.params.get('action')?.trim();
    const named = action ? operationForAction(input.group, input.namespace, action) : undefined;
    return {
      ok: false,
      kind: 'unreadable',
      version: assumed,
      text: READ_FAILED + reason,
      ...(named ? { operation: named } : {}),
      ...withXml(),
    };
  };

  const decoded = decode(input.body, contentType.params.get('charset'));
  if (!decoded.ok) {
    return decoded.unsupported
      ? { ok: false, kind: 'unsupported-media-type', version: assumed, text: decoded.message }
      : unreadable(decoded.message);
  }
  xml = decoded.text;

  const read = readEnvelopeRoot(xml, limits);
  if ('reason' in read) return unreadable(read.reason);
  const { root } = read;
  const isEnvelope = root.local === 'Envelope';
  let version: SoapVersion;
  if (isEnvelope && root.ns === SOAP12_ENV) version = '1.2';
  else if (isEnvelope && root.ns === SOAP11_ENV) version = '1.1';
  else {
    // Any other root (docs/bindings.md#from-the-envelope). ASMX's text names the SOAP 1.1
    // namespace whichever version the reply is in (docs/faults.md#reading-the-envelope).
    return fault(
      'VersionMismatch',
      `Possible SOAP version mismatch: Envelope namespace ${root.ns} was unexpected. Expecting ${SOAP11_ENV}.`,
    );
  }
  if (version === '1.1' && isSoap12Type) {
    // ASMX took SOAP 1.1 only as text/xml (SoapServerProtocol.ReadParameters): 415, in SOAP 1.1.
    return {
      ok: false,
      kind: 'unsupported-media-type',
      version,
      text: `A SOAP 1.1 envelope must be sent as text/xml; this one came as '${input.contentType ?? ''}'.`,
      xml,
    };
  }
  const found = bodyOf(root);
  if (found.notUnderstood !== undefined) {
    return fault('MustUnderstand', `SOAP header ${found.notUnderstood} was not understood.`, version);
  }
  const { body } = found;
  if (!body) {
    return fault(
      'Client',
      `${READ_FAILED}Request format is invalid: Missing required soap:Body element.`,
      version,
    );
  }

  const { group, namespace } = input;
  const bodyElement = body.children().next().value as Element | undefined;
  const bodyOperation =
    bodyElement && (bodyElement.ns === namespace || bodyElement.ns === '')
      ? findOperation(group, bodyElement.local)
      : undefined;

  let operation: OperationDef | undefined;
  if (version === '1.1' && input.soapAction !== undefined) {
    // One pair of surrounding quotes removed, compared exactly with the SOAP action
    // (docs/bindings.md#soap-11-with-a-soapaction-header).
    const action = unquote(input.soapAction);
    operation = operationForAction(group, namespace, action);
    if (!operation) {
      return fault(
        'Client',
        `Server did not recognize the value of HTTP Header SOAPAction: ${action}.`,
        version,
      );
    }
  } else {
    // SOAP 1.2, and SOAP 1.1 without SOAPAction: the action parameter, then the body element
    // (docs/bindings.md#soap-12-and-soap-11-without-soapaction).
    const action = version === '1.2' ? contentType.params.get('action')?.trim() : undefined;
    const fromAction = action === undefined ? undefined : operationForAction(group, namespace, action);
    operation = fromAction ?? bodyOperation;
    if (!operation) {
      return fault(
        'Client',
        action
          ? `Unable to handle request. The action '${action}' was not recognized.`
          : 'Unable to handle request without a valid action parameter. Please supply a valid soap action.',
        version,
      );
    }
  }

  if (!bodyElement || bodyOperation !== operation) {
    return {
      ok: false,
      kind: 'fault',
      version,
      code: 'Client',
      text: `${READ_FAILED}Request format is invalid: soap:Body must hold the element ${operation.name} in the namespace ${namespace}.`,
      operation,
      xml,
    };
  }

  return { ok: true, version, operation, params: paramsOf(bodyElement, operation, namespace), xml };
}

/**
 * The checks made before either XML reader runs (docs/faults.md#reading-the-request), each reader's
 * work growing with what they count, then the root element: the common shape in one pass, anything
 * else through the validator and the parser. `reason` words why the message cannot be read.
 */
function readEnvelopeRoot(xml: string, limits: SoapLimits): { root: Element } | { reason: string } {
  // Never expand a DTD: refuse any declaration before the parser sees it
  // (docs/faults.md#reading-the-request).
  const dtd = /<!(DOCTYPE|ENTITY)/i.exec(xml);
  if (dtd) {
    const { line, column } = position(xml, dtd.index);
    return {
      reason: `DOCTYPE and ENTITY declarations are not allowed in a SOAP message (line ${line}, column ${column}).`,
    };
  }
  if (countElements(xml, limits.maxElements) > limits.maxElements) {
    return { reason: `The message has more than ${limits.maxElements} elements.` };
  }
  // Counted before either reader runs: their work grows with the attributes (attribute-limits.ts).
  const crowded = attributeBreach(xml, limits.maxAttributesPerElement, limits.maxAttributes);
  if (crowded?.kind === 'message') {
    return { reason: `The message has more than ${limits.maxAttributes} attributes.` };
  }
  if (crowded) {
    const { line, column } = position(xml, crowded.index);
    return {
      reason: `The ${crowded.kind} at line ${line}, column ${column} has more than ${limits.maxAttributesPerElement} attributes.`,
    };
  }
  // Counted before either reader runs: each reader's work grows with the references (countReferences).
  if (countReferences(xml, limits.maxReferences) > limits.maxReferences) {
    return { reason: `The message has more than ${limits.maxReferences} entity and character references.` };
  }
  // The common shape in one pass; anything else through the validator and the parser.
  let root = scanEnvelope(xml, limits.maxDepth);
  if (!root) {
    if (xml.length > limits.maxGeneralChars) {
      return {
        reason: `The message is longer than ${limits.maxGeneralChars} characters and not in the plain form read at that length: no comments, CDATA sections, processing instructions, references or carriage returns.`,
      };
    }
    const tree = readTree(xml, limits.maxDepth);
    if (!tree.ok) return { reason: tree.reason };
    root = tree.root;
  }
  return { root };
}

/**
 * The envelope's Body, its first in the envelope's namespace; or the first Header entry before it
 * that must be understood (none is: ASMX's MustUnderstand fault).
 */
function bodyOf(root: Element): { body: Element | undefined; notUnderstood?: string } {
  const envNs = root.ns;
  for (const child of root.children()) {
    if (child.ns !== envNs) continue;
    if (child.local === 'Header') {
      for (const header of child.children()) {
        const mu = header.attr(envNs, 'mustUnderstand');
        if (mu === '1' || mu === 'true') return { body: undefined, notUnderstood: header.local };
      }
    } else if (child.local === 'Body') {
      return { body: child };
    }
  }
  return { body: undefined };
}

/** The operation's parameters in the body element: the first of each name, xsi:nil ones absent. */
function paramsOf(bodyElement: Element, operation: OperationDef, namespace: string): Map<string, string> {
  const wanted = new Set(operation.params.map((p) => p.name));
  const params = new Map<string, string>();
  for (const child of bodyElement.children()) {
    if (child.ns !== namespace && child.ns !== '') continue;
    if (!wanted.has(child.local) || params.has(child.local)) continue;
    const nil = child.attr(XSI_NS, 'nil');
    if (nil === 'true' || nil === '1') continue;
    params.set(child.local, child.text());
  }
  return params;
}

/**
 * The general reader: the validator (for its error's line and column), then the parser, then a
 * namespace-aware view of the root. `reason` words why the message cannot be read.
 */
export function readTree(
  xml: string,
  maxDepth: number,
): { ok: true; root: Element } | { ok: false; reason: string } {
  const fail = (reason: string) => ({ ok: false as const, reason });
  if (xml.trim() === '') return fail('Root element is missing.');
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    return fail(`There is an error in XML document (${valid.err.line}, ${valid.err.col}): ${valid.err.msg}`);
  }
  let nodes: XmlNode[];
  try {
    nodes = parserFor(maxDepth).parse(xml) as XmlNode[];
  } catch (err) {
    return fail(
      err instanceof Error && /nested/i.test(err.message)
        ? `The message nests elements more than ${maxDepth} deep.`
        : 'The XML document could not be parsed.',
    );
  }

  const roots = nodes.filter(isElement);
  if (roots.length !== 1) {
    return fail(
      `There is an error in XML document: ${roots.length === 0 ? 'Root element is missing.' : 'There are multiple root elements.'}`,
    );
  }
  return { ok: true, root: element(roots[0] as XmlNode, ROOT_SCOPE) };
}

const operationForAction = (group: GroupDef, namespace: string, action: string): OperationDef | undefined =>
  group.operations.find((op) => soapActionOf(namespace, op.name) === action);

const unquote = (value: string): string =>
  value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;

type Decoded = { ok: true; text: string } | { ok: false; unsupported: boolean; message: string };

const decoders = new Map<string, InstanceType<typeof TextDecoder>>();

/** The charset parameter, else a byte-order mark, else UTF-8 (docs/bindings.md#charset). */
function decode(body: Uint8Array, charset: string | undefined): Decoded {
  let label = charset?.trim() || undefined;
  if (!label) {
    if (body[0] === 0xff && body[1] === 0xfe) label = 'utf-16le';
    else if (body[0] === 0xfe && body[1] === 0xff) label = 'utf-16be';
    else label = 'utf-8';
  }
  let decoder = decoders.get(label);
  if (!decoder) {
    try {
      decoder = new TextDecoder(label, { fatal: true });
    } catch {
      return {
        ok: false,
        unsupported: true,
        message: `Unsupported charset '${label}'. Send the request as utf-8.`,
      };
    }
    // Bounded: only labels TextDecoder knows get here, and there are a few dozen of them.
    decoders.set(label, decoder);
  }
  try {
    return { ok: true, text: decoder.decode(body) };
  } catch {
    return { ok: false, unsupported: false, message: `The request body is not valid ${label}.` };
  }
}

/** Counts element start tags, stopping once past the limit. */
function countElements(xml: string, limit: number): number {
  let count = 0;
  for (let i = xml.indexOf('<'); i !== -1 && count <= limit; i = xml.indexOf('<', i + 1)) {
    const next = xml.charCodeAt(i + 1);
    // Not `</`, `<?` or `<!`: an element starts here.
    if (next !== 0x2f && next !== 0x3f && next !== 0x21) count++;
  }
  return count;
}

/**
 * Counts `&` in the text, stopping once past the limit. Every reference starts with one, and XML
 * allows a `&` nowhere else but in CDATA sections, comments and processing instructions; counting
 * those too makes the count hold however a reader delimits markup (attribute-limits.ts), and no
 * client sends thousands of them. Why: fast-xml-parser's validator checks each reference and its
 * parser decodes each into a piece of a joined string, so a body of nothing else held the event
 * loop (docs/faults.md#reading-the-request).
 */
function countReferences(xml: string, limit: number): number {
  let count = 0;
  for (let i = xml.indexOf('&'); i !== -1 && count <= limit; i = xml.indexOf('&', i + 1)) count++;
  return count;
}

/** Line and column (from 1) of `index`, counting line feeds without splitting the text into lines. */
function position(text: string, index: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let lf = text.indexOf('\n'); lf !== -1 && lf < index; lf = text.indexOf('\n', lf + 1)) {
    line++;
    lineStart = lf + 1;
  }
  return { line, column: index - lineStart + 1 };
}

// --- namespace-aware view of the parser's output -------------------------------------------

function isElement(node: XmlNode): boolean {
  for (const key of Object.keys(node)) if (key !== ATTRS && key[0] !== '#' && key[0] !== '?') return true;
  return false;
}

function tagOf(node: XmlNode): string {
  for (const key of Object.keys(node)) if (key !== ATTRS) return key;
  return '';
}

function element(node: XmlNode, parentScope: Scope): Element {
  const tag = tagOf(node);
  const attrs = Object.entries((node[ATTRS] as Attrs | undefined) ?? {});
  const scope = scopeOf(attrs, parentScope);
  const content = (node[tag] as XmlNode[] | undefined) ?? [];
  return elementView(
    tag,
    attrs,
    scope,
    function* () {
      for (const child of content) if (isElement(child)) yield element(child, scope);
    },
    () => {
      let text = '';
      for (const child of content) if (typeof child[TEXT] === 'string') text += child[TEXT];
      return text;
    },
  );
}
