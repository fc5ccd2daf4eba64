/**
 * Auth codes in the shapes the service refuses stay out of every file and of the log, not only
 * in the shapes it reads (issue 32, point 6; docs/security.md#what-is-masked-and-where).
 *
 * Each request carries a code of its own, through the real app: the shapes a client gets wrong
 * (path parameters, a multipart body, junk after the name, JSON, a body sent to the other kind of
 * endpoint, a code in a header the answer echoes, wrong paths and verbs, the console's API) over
 * SOAP 1.1 and 1.2, HTTP GET and POST; then every shape fuzz.test.ts knows how to make that can
 * carry a code — envelopes with its byte mutations and nasty bytes after the code element's name
 * and around its value, spoiled SOAPAction and Content-Type; queries and forms of its fuzz fields
 * with the code's field spelled any way; fuzzed operation names with the code as a path parameter;
 * help pages. The fuzzer's mutations stay off the code's own field (its name, separator and value):
 * a byte flipped there makes it some other name or some other value.
 *
 * Then every byte of DATA_DIR (database, WAL, shared memory, anything) is searched for each code,
 * while the app is open and once it is closed, and the whole log: none may be there. Markers sent
 * beside the codes in fields that are not secret must be found, in DATA_DIR or the log: the search
 * can fail, and the records stay useful.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { soapActionOf, soapRequestBody } from '@school/asmx';
import { type OperationDef, operationByName } from '@school/contract';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bytesArb,
  bytesOf,
  encodeArb,
  fieldBytesArb,
  formContentTypeArb,
  fuzzText,
  mutate,
  mutationArb,
  NASTY_BYTES,
  spoil,
} from './fuzz-inputs.js';
import { startTestApp, type TestApp, tempDataDir } from './helpers.js';

const NS = 'http://tempuri.org/';
const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';
const PHONE = '+447911123456';
const P = 'phone=%2B447911123456';
const ACTION = soapActionOf(NS, 'AuthCode');
const AUTH_CODE = operationByName('AuthCode') as OperationDef;
/** Generated inputs per family of the fuzzer's shapes: `MASKING_SHAPES_RUNS` for more, `MASKING_SHAPES_SEED` for others. */
const RUNS = Number(process.env.MASKING_SHAPES_RUNS) || 60;
const SEED = Number(process.env.MASKING_SHAPES_SEED) || 20_240_632;

// --- codes and markers -------------------------------------------------------------------------------

/** mulberry32: the same codes every run. */
let state = SEED;
function random(): number {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
}
const pick = (chars: string) => chars[Math.floor(random() * chars.length)] as string;
const NOT_HEX = 'ghjkmnpqrstuvwxyzGHJKMNPQRSTUVWXYZ';
const ALNUM = 'abcdefghjkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789';
let serial = 0;

/**
 * 11 letters and digits after `prefix`, unique (a serial number ends it), with a letter no hex
 * digit is and a digit: no id, time, hash or base64 in a store or a log holds one by chance.
 */
function token(prefix: string): string {
  serial++;
  let random6 = '';
  for (let i = 0; i < 6; i++) random6 += pick(ALNUM);
  return `${prefix}${pick(NOT_HEX)}${Math.floor(random() * 10)}${random6}${serial.toString(36).padStart(3, '0')}`;
}

interface Sent {
  readonly shape: string;
  readonly code: string;
  /** Where the code was sent: the URL, headers and body around it (for a leak's message). */
  readonly context: string;
  /** A non-secret value sent beside the code, which must be found; none for generated inputs. */
  readonly marker?: string;
}
const sent: Sent[] = [];

// --- the app, its data folder and its log -----------------------------------------------------------

let t: TestApp;
let dataDir: string;
let removeData: () => void;
let logged = '';

beforeAll(async () => {
  const data = tempDataDir();
  dataDir = data.dir;
  removeData = data.remove;
  const stream = new Writable({
    write(chunk, _encoding, done) {
      logged += chunk.toString();
      done();
    },
  });
  t = await startTestApp({ LOG_LEVEL: 'trace' }, dataDir, { level: 'trace', stream });
});
let closed = false;
afterAll(async () => {
  if (!closed) await t?.app.close();
  removeData?.();
});

/** Sends one request carrying a fresh code; `build` puts the code (and the marker) in its shape. */
async function send(
  shape: string,
  build: (code: string, marker: string) => InjectOptions,
  options: { staff?: boolean; marked?: boolean } = {},
): Promise<void> {
  const code = token('');
  const marker = token('Mk');
  const request = build(code, marker);
  const res = options.staff ? await t.inject(request) : await t.app.inject(request);
  // Whatever the shape, an answer, never an internal error.
  expect(res.body, shape).not.toMatch(/An internal error occurred/);
  const payload = request.payload;
  const whole = `${request.url} ${JSON.stringify(request.headers ?? {})} ${Buffer.isBuffer(payload) ? payload.toString('latin1') : typeof payload === 'string' ? payload : JSON.stringify(payload ?? '')}`;
  const at = whole.indexOf(code);
  const context = JSON.stringify(whole.slice(Math.max(0, at - 120), at + code.length + 60));
  sent.push(options.marked === false ? { shape, code, context } : { shape, code, context, marker });
}

// --- requests ---------------------------------------------------------------------------------------

const SOAP11 = { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${ACTION}"` };
const SOAP12 = { 'content-type': `application/soap+xml; charset=utf-8; action="${ACTION}"` };

const envelope = (soap12: boolean, params: string, op = `<AuthCode xmlns="${NS}">`) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${soap12 ? S12 : S11}"><soap:Body>${op}${params}</AuthCode></soap:Body></soap:Envelope>`;

const soap = (
  soap12: boolean,
  marker: string,
  payload: string | Buffer,
  headers: Record<string, string> = {},
) =>
  ({
    method: 'POST',
    url: `/AuthCodeSending.asmx?memo=${marker}`,
    headers: { ...(soap12 ? SOAP12 : SOAP11), ...headers },
    payload,
  }) as const;

const post = (marker: string, payload: string | Buffer, contentType?: string): InjectOptions => ({
  method: 'POST',
  url: `/AuthCodeSending.asmx/AuthCode?memo=${marker}`,
  headers: contentType === undefined ? {} : { 'content-type': contentType },
  payload,
});

const get = (url: string): InjectOptions => ({ method: 'GET', url });

/** Half the characters percent-encoded. */
const halfEncoded = (code: string) =>
  [...code].map((c, i) => (i % 2 ? c : `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join('');

const multipart = (parts: readonly (readonly [string, string])[], nl = '\r\n', boundary = 'XyZ') =>
  `${parts.map(([disposition, content]) => `--${boundary}${nl}Content-Disposition: ${disposition}${nl}${nl}${content}${nl}`).join('')}--${boundary}--${nl}`;

// --- the property -----------------------------------------------------------------------------------

describe('auth codes in any shape stay out of DATA_DIR and the log', () => {
  it("in the review's three shapes", async () => {
    await send('a path parameter', (c, m) => get(`/AuthCodeSending.asmx/AuthCode;code=${c}?${P}&memo=${m}`));
    await send('a multipart part named code', (c, m) =>
      post(
        m,
        multipart([
          ['form-data; name="code"', c],
          ['form-data; name="phone"', PHONE],
        ]),
        'multipart/form-data; boundary=XyZ',
      ),
    );
    await send('Code%00= in the query', (c, m) =>
      get(`/AuthCodeSending.asmx/AuthCode?Code%00=${c}&${P}&memo=${m}`),
    );
  });

  it('in path parameters, anywhere in the path, and on wrong paths', async () => {
    const paths: [string, (c: string) => string][] = [
      ['CODE and phone as path parameters', (c) => `/AuthCodeSending.asmx/AuthCode;CODE=${c};${P}`],
      ['an escaped name', (c) => `/AuthCodeSending.asmx/AuthCode;%63ode=${c}`],
      ['junk after the name', (c) => `/AuthCodeSending.asmx/AuthCode;code%00=${c}`],
      ['an escaped junk that decodes to a delimiter', (c) => `/AuthCodeSending.asmx/AuthCode;code%2F=${c}`],
      ['the group in another case', (c) => `/authcodesending.ASMX/AuthCode;code=${c}`],
      ['the operation in another case', (c) => `/AuthCodeSending.asmx/authcode;code=${c}`],
      ['escaped separators, echoed decoded', (c) => `/AuthCodeSending.asmx/AuthCode%3Bcode%3D${c}`],
      ['a colon', (c) => `/AuthCodeSending.asmx/AuthCode;code:${c}`],
      ['an escaped value', (c) => `/AuthCodeSending.asmx/AuthCode;code=${halfEncoded(c)}`],
      ['on the group', (c) => `/AuthCodeSending.asmx;code=${c}/AuthCode`],
      ['after the operation', (c) => `/AuthCodeSending.asmx/AuthCode/x;code=${c}`],
      ['on an unknown operation', (c) => `/AuthCodeSending.asmx/%E2%80%8B;code=${c}`],
      ['on another group', (c) => `/BookPdf.asmx/GetBookPdfByTerm;code=${c}?termId=1&srid=2&classId=3`],
      ['nowhere', (c) => `/nowhere;code=${c}?CODE=${c}`],
      ['an API path', (c) => `/api/calls;code=${c}`],
    ];
    for (const [shape, url] of paths) {
      await send(shape, (c, m) => get(`${url(c)}${url(c).includes('?') ? '&' : '?'}memo=${m}`));
    }
    // A malformed escape: Fastify refuses the URL before any route (not recorded, not logged).
    await send('a malformed escape', (c) => get(`/AuthCodeSending.asmx/AuthCode;code=${c}%ZZ`), {
      marked: false,
    });
  });

  it('in queries, whatever the spelling of the name and the separator', async () => {
    const fields: [string, (c: string) => string][] = [
      ['as read', (c) => `code=${c}`],
      ['in capitals', (c) => `CODE=${c}`],
      ['escaped', (c) => `%63ode=${c}`],
      ['escaped capitals', (c) => `%43ODE=${c}`],
      ['mixed', (c) => `c%4Fde=${c}`],
      ['NUL after', (c) => `Code%00%00=${c}`],
      ['a space after', (c) => `code%20=${c}`],
      ['a plus after', (c) => `code+=${c}`],
      ['brackets', (c) => `code[]=${c}`],
      ['escaped brackets', (c) => `code%5B%5D=${c}`],
      ['a suffix', (c) => `code.x=${c}`],
      ['an underscore', (c) => `code_x=${c}`],
      ['broken UTF-8 after', (c) => `code%FF=${c}`],
      ['an escaped =', (c) => `code%3D${c}`],
      ['a colon', (c) => `code:${c}`],
      ['an escaped colon', (c) => `code%3A${c}`],
      ['an escaped value', (c) => `code=${halfEncoded(c)}`],
      ['twice', (c) => `code=1&code=${c}`],
      ['in the phone', (c) => `phone=code%3D${c}`],
      ['in the phone, a slash before =', (c) => `phone=code%2F%3D${c}`],
    ];
    for (const [shape, field] of fields) {
      await send(`query: ${shape}`, (c, m) =>
        get(`/AuthCodeSending.asmx/AuthCode?${field(c)}&${P}&memo=${m}`),
      );
      await send(`form: ${shape}`, (c, m) =>
        post(m, `${field(c)}&${P}`, 'application/x-www-form-urlencoded'),
      );
    }
    await send('other verbs', (c, m) => ({
      method: 'PUT',
      url: `/AuthCodeSending.asmx/AuthCode?code=${c}&memo=${m}`,
    }));
    for (const method of ['HEAD', 'DELETE', 'PATCH', 'OPTIONS'] as const)
      await send(`${method}`, (c, m) => ({
        method,
        url: `/AuthCodeSending.asmx/AuthCode;code=${c}?code=${c}&memo=${m}`,
      }));
    await send('another group', (c, m) => get(`/NotificationNotes.asmx/SendMarkNotes?code=${c}&memo=${m}`));
    for (const help of ['op=AuthCode&code=', 'wsdl&code=', 'op=AuthCode;code=', 'disco&CODE='])
      await send(`help page ?${help}`, (c, m) => get(`/AuthCodeSending.asmx?${help}${c}&memo=${m}`));
  });

  it('in bodies of any kind, whatever the Content-Type says', async () => {
    const form = 'application/x-www-form-urlencoded';
    const bodies: [string, (c: string) => string | Buffer, string | undefined][] = [
      ['NUL after the name', (c) => `code\u0000=${c}&${P}`, form],
      ['a space after the name', (c) => `code =${c}&${P}`, form],
      [
        'broken UTF-8 after the name',
        (c) => Buffer.concat([Buffer.from('code'), Buffer.from([0xff]), Buffer.from(`=${c}&${P}`)]),
        form,
      ],
      ['a form as text/plain', (c) => `code=${c}&${P}`, 'text/plain'],
      ['a form with no Content-Type', (c) => `code=${c}&${P}`, undefined],
      ['JSON', (c) => JSON.stringify({ code: c, phone: PHONE }), 'application/json'],
      ['JSON, spaced', (c) => `{ "Code" : "${c}" , "phone" : "${PHONE}" }`, 'application/json'],
      ['JSON, a number', (c) => `{"code":${c},"phone":"${PHONE}"}`, 'application/json'],
      ['header-like text', (c) => `code: ${c}\r\nphone: ${PHONE}\r\n`, 'text/plain'],
      [
        'an envelope',
        (c) => envelope(false, `<code>${c}</code><phone>${PHONE}</phone>`),
        'text/xml; charset=utf-8',
      ],
      [
        'multipart, LF line ends',
        (c) => multipart([['form-data; name=code', c]], '\n'),
        'multipart/form-data; boundary=XyZ',
      ],
      [
        'multipart, capitals',
        (c) => multipart([['FORM-DATA; NAME="CODE"', c]]),
        'multipart/form-data; boundary=XyZ',
      ],
      [
        'multipart, name*=',
        (c) => multipart([["form-data; name*=UTF-8''%63ode", c]]),
        'multipart/form-data; boundary=XyZ',
      ],
      [
        'multipart, a file',
        (c) => multipart([['form-data; name="f"; filename="code.txt"', c]]),
        'multipart/form-data; boundary=XyZ',
      ],
      [
        'multipart, single quotes',
        (c) => multipart([["form-data; name='code'", c]]),
        'multipart/form-data; boundary=XyZ',
      ],
      [
        'multipart, cut short',
        (c) => `--XyZ\r\nContent-Disposition: form-data; name="code"\r\n\r\n${c}`,
        'multipart/form-data; boundary=XyZ',
      ],
      [
        'multipart, no Content-Type',
        (c) => multipart([['form-data; name="code"', c]], '\r\n', 'other'),
        undefined,
      ],
    ];
    for (const [shape, body, type] of bodies)
      await send(`HTTP POST: ${shape}`, (c, m) => post(m, body(c), type));
    await send('a code in the Content-Type', (c, m) =>
      post(m, `a=1&${P}`, `multipart/form-data; boundary=XyZ; code=${c}`),
    );
    await send('a code in the form Content-Type', (c, m) => post(m, `a=1&${P}`, `${form}; code=${c}`));
    await send('a code in the User-Agent', (c, m) => ({
      ...get(`/AuthCodeSending.asmx/AuthCode?${P}&memo=${m}`),
      headers: { 'user-agent': `code=${c}` },
    }));
  });

  it('in SOAP 1.1 and 1.2 envelopes, well-formed or not, and their headers', async () => {
    const params: [string, (c: string) => string | Buffer][] = [
      ['as read', (c) => `<code>${c}</code><phone>${PHONE}</phone>`],
      ['in capitals', (c) => `<CODE>${c}</CODE><phone>${PHONE}</phone>`],
      ['prefixed', (c) => `<n:code xmlns:n="${NS}">${c}</n:code><phone>${PHONE}</phone>`],
      ['CDATA', (c) => `<code><![CDATA[${c}]]></code><phone>${PHONE}</phone>`],
      ['junk after the name', (c) => `<code-x>${c}</code-x><phone>${PHONE}</phone>`],
      ['a control after the name', (c) => `<code\u0001>${c}</code><phone>${PHONE}</phone>`],
      ['self-closing, then the value', (c) => `<code/>>${c}</code><phone>${PHONE}</phone>`],
      ['</ after the name', (c) => `<code</>${c}</code><phone>${PHONE}</phone>`],
      ['cut short', (c) => `<code>${c}`],
      ['in a comment', (c) => `<!-- <code>${c}</code> --><phone>${PHONE}</phone>`],
      ['in the phone', (c) => `<phone>code=${c}</phone>`],
      ['in the phone, a colon', (c) => `<phone>code: ${c}</phone>`],
      [
        'broken UTF-8 after the name',
        (c) => Buffer.from(`<code\u00ff>${c}</code><phone>${PHONE}</phone>`, 'latin1'),
      ],
    ];
    for (const soap12 of [false, true]) {
      const v = soap12 ? 'SOAP 1.2' : 'SOAP 1.1';
      for (const [shape, inner] of params) {
        await send(`${v}: ${shape}`, (c, m) => {
          const content = inner(c);
          const body = Buffer.isBuffer(content)
            ? Buffer.concat([
                Buffer.from(envelope(soap12, '').split('</AuthCode>')[0] as string),
                content,
                Buffer.from(`</AuthCode></soap:Body></soap:Envelope>`),
              ])
            : envelope(soap12, content);
          return soap(soap12, m, body);
        });
      }
      await send(`${v}: an attribute`, (c, m) =>
        soap(soap12, m, envelope(soap12, `<phone>${PHONE}</phone>`, `<AuthCode xmlns="${NS}" code="${c}">`)),
      );
      await send(`${v}: a form`, (c, m) => soap(soap12, m, `code=${c}&${P}`));
      await send(`${v}: JSON`, (c, m) => soap(soap12, m, JSON.stringify({ code: c, phone: PHONE })));
      await send(`${v}: multipart`, (c, m) => soap(soap12, m, multipart([['form-data; name="code"', c]])));
      await send(`${v}: a code in the Content-Type`, (c, m) =>
        soap(soap12, m, envelope(soap12, `<phone>${PHONE}</phone>`), {
          'content-type': `${soap12 ? 'application/soap+xml' : 'text/xml'}; charset=utf-8; code=${c}`,
        }),
      );
    }
    await send('SOAP 1.1: a code in the SOAPAction', (c, m) =>
      soap(false, m, envelope(false, `<phone>${PHONE}</phone>`), { soapaction: `"${ACTION};code=${c}"` }),
    );
    await send('SOAP 1.2: a code in the action', (c, m) =>
      soap(true, m, envelope(true, `<phone>${PHONE}</phone>`), {
        'content-type': `application/soap+xml; charset=utf-8; action="${ACTION}?code=${c}"`,
      }),
    );
    await send('multipart as multipart', (c, m) =>
      soap(false, m, multipart([['form-data; name="code"', c]]), {
        'content-type': 'multipart/form-data; boundary=XyZ',
      }),
    );
  });

  it("in the console's API", async () => {
    await send(
      'an unknown operation',
      (c) => ({ method: 'POST', url: `/api/operations/AuthCode;code=${c}`, payload: { phone: PHONE } }),
      { staff: true, marked: false },
    );
    await send(
      'the query',
      (c, m) => ({
        method: 'POST',
        url: `/api/operations/AuthCode?code=${c}&memo=${m}`,
        payload: { code: c, phone: PHONE },
      }),
      { staff: true },
    );
    await send(
      'the name in capitals',
      (c, m) => ({
        method: 'POST',
        url: `/api/operations/AuthCode?memo=${m}`,
        payload: { CODE: c, phone: PHONE },
      }),
      { staff: true },
    );
    await send(
      'a list',
      (c, m) => ({
        method: 'POST',
        url: `/api/operations/AuthCode?memo=${m}`,
        payload: { code: [c], phone: PHONE },
      }),
      { staff: true },
    );
  });

  // --- the fuzzer's shapes, each made to carry a code ---------------------------------------------

  it("in the fuzzer's envelopes: byte mutations around the code element, nasty bytes in it", async () => {
    /** Nasty bytes that do not make the name another one (a letter or digit would). */
    const nameJunk = bytesArb.filter((bytes) => !/[A-Za-z0-9]/.test(String.fromCharCode(bytes[0] ?? 0x41)));
    const arb = fc.record({
      soap12: fc.boolean(),
      before: fc.array(mutationArb, { maxLength: 3 }),
      after: fc.array(mutationArb, { maxLength: 3 }),
      afterName: fc.option(nameJunk, { nil: undefined }),
      beforeValue: fc.option(bytesArb, { nil: undefined }),
      afterValue: fc.option(bytesArb, { nil: undefined }),
      phone: fc.oneof(fc.constant(PHONE), fuzzText),
      soapAction: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(`"${ACTION}"`, ACTION, undefined) },
        { weight: 2, arbitrary: spoil(`"${ACTION}"`) },
        { weight: 1, arbitrary: fuzzText },
      ),
      contentType: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        {
          weight: 2,
          arbitrary: fc.constantFrom(
            'text/xml',
            'text/xml; charset=bogus',
            'text/xml; charset="utf-8"',
            'application/soap+xml; action="http://tempuri.org/Nope"',
            'text/plain',
            '',
          ),
        },
        { weight: 1, arbitrary: spoil(`application/soap+xml; charset=utf-8; action="${ACTION}"`) },
      ),
    });
    const PLACE = 'CODEPLACE';
    for (const o of fc.sample(arb, { seed: SEED, numRuns: RUNS })) {
      await send(
        'fuzzed envelope',
        (c) => {
          const whole = soapRequestBody(o.soap12 ? '1.2' : '1.1', AUTH_CODE, NS, {
            code: PLACE,
            phone: o.phone,
          });
          const element = `<code>${PLACE}</code>`;
          const at = whole.indexOf(element);
          const codeElement = [
            ...bytesOf('<code'),
            ...(o.afterName ?? []),
            ...bytesOf('>'),
            ...(o.beforeValue ?? []),
            ...bytesOf(c),
            ...(o.afterValue ?? []),
            ...bytesOf('</code>'),
          ];
          const body = [
            ...mutate(bytesOf(whole.slice(0, at)), o.before),
            ...codeElement,
            ...mutate(bytesOf(whole.slice(at + element.length)), o.after),
          ];
          const headers: Record<string, string> = {
            'content-type':
              o.contentType ??
              (o.soap12
                ? `application/soap+xml; charset=utf-8; action="${ACTION}"`
                : 'text/xml; charset=utf-8'),
          };
          if (!o.soap12 && o.soapAction !== undefined) headers.soapaction = o.soapAction;
          return { method: 'POST', url: '/AuthCodeSending.asmx', headers, payload: Buffer.from(body) };
        },
        { marked: false },
      );
    }
  });

  /** The code's field: its name in any case or escaping, junk after it, any separator, the value as is or escaped. */
  const codeFieldArb = fc.record({
    name: fc
      .array(fc.constantFrom('lower', 'upper', 'escaped', 'escaped-upper'), { minLength: 4, maxLength: 4 })
      .map((hows) =>
        [...'code']
          .map((ch, i) => {
            const c = hows[i] === 'upper' || hows[i] === 'escaped-upper' ? ch.toUpperCase() : ch;
            return hows[i]?.startsWith('escaped') ? `%${c.charCodeAt(0).toString(16).toUpperCase()}` : c;
          })
          .join(''),
      ),
    // Escaped bytes (any), as a URL carries them; their first not a letter or digit.
    junk: fc.option(
      fc
        .constantFrom(...NASTY_BYTES)
        .map((bytes) => bytes.map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('')),
      { nil: '' },
    ),
    separator: fc.constantFrom('=', '%3D', '%3d', ':', '%3A'),
    escaped: fc.boolean(),
  });
  type CodeField = typeof codeFieldArb extends fc.Arbitrary<infer F> ? F : never;
  const field = (f: CodeField, code: string) =>
    `${f.name}${f.junk}${f.separator}${f.escaped ? halfEncoded(code) : code}`;

  /** Fuzz fields as the fuzzer writes them (formArb): parameters, fuzz names and values, stray separators. */
  const fuzzFieldArb = fc.oneof(
    fc
      .tuple(fc.constantFrom('phone', 'code', 'x'), fc.boolean(), fieldBytesArb)
      .chain(([name, upper, value]) =>
        encodeArb(value).map((v) => `${upper ? name.toUpperCase() : name}=${v}`),
      ),
    fc.constantFrom(P, '&', '=', '%', '%ZZ=1'),
    fc
      .tuple(fieldBytesArb, fieldBytesArb)
      .chain(([n, v]) => fc.tuple(encodeArb(n), encodeArb(v)).map(([a, b]) => `${a}=${b}`)),
  );

  it("in the fuzzer's queries and forms, the code's field among fuzz fields", async () => {
    const arb = fc.record({
      post: fc.boolean(),
      name: fc.oneof(
        { weight: 6, arbitrary: fc.constant('AuthCode') },
        { weight: 1, arbitrary: fc.constant('authcode') },
        {
          weight: 2,
          arbitrary: fuzzText.map((s) =>
            Buffer.from(s, 'utf8').reduce((out, b) => `${out}%${b.toString(16).padStart(2, '0')}`, ''),
          ),
        },
      ),
      before: fc.array(fuzzFieldArb, { maxLength: 3 }),
      after: fc.array(fuzzFieldArb, { maxLength: 3 }),
      code: codeFieldArb,
      mutationsBefore: fc.array(mutationArb, { maxLength: 2 }),
      mutationsAfter: fc.array(mutationArb, { maxLength: 2 }),
      contentType: formContentTypeArb,
    });
    for (const o of fc.sample(arb, { seed: SEED, numRuns: 2 * RUNS })) {
      await send(
        o.post ? 'fuzzed form' : 'fuzzed query',
        (c) => {
          const url = `/AuthCodeSending.asmx/${o.name}`;
          const own = field(o.code, c);
          if (!o.post) return get(`${url}?${[...o.before, own, ...o.after].join('&')}`);
          // The fuzzer's mutations, off the code's field.
          const body = [
            ...mutate(bytesOf(o.before.join('&')), o.mutationsBefore),
            ...bytesOf(`&${own}&`),
            ...mutate(bytesOf(o.after.join('&')), o.mutationsAfter),
          ];
          return {
            method: 'POST',
            url,
            headers: o.contentType === undefined ? {} : { 'content-type': o.contentType },
            payload: Buffer.from(body),
          };
        },
        { marked: false },
      );
    }
  });

  it("in the fuzzer's operation names, the code as a path parameter, and on help pages", async () => {
    const arb = fc.record({
      name: fuzzText.map((s) =>
        Buffer.from(s, 'utf8').reduce((out, b) => `${out}%${b.toString(16).padStart(2, '0')}`, ''),
      ),
      code: codeFieldArb,
      query: fc.array(fuzzFieldArb, { maxLength: 3 }),
      help: fc.constantFrom('op', 'OP', 'wsdl', 'disco', ''),
      helpValue: fieldBytesArb.chain(encodeArb),
    });
    for (const o of fc.sample(arb, { seed: SEED, numRuns: RUNS })) {
      await send(
        'fuzzed path parameter',
        (c) => get(`/AuthCodeSending.asmx/${o.name};${field(o.code, c)}?${o.query.join('&')}`),
        { marked: false },
      );
      await send(
        'fuzzed help page',
        (c) => get(`/AuthCodeSending.asmx?${o.help}=${o.helpValue}&${field(o.code, c)}`),
        { marked: false },
      );
    }
  });

  // --- the search -----------------------------------------------------------------------------------

  it('leaves none of the codes in any file of DATA_DIR, open or closed, nor in the log', {
    timeout: 300_000,
  }, async () => {
    expect(sent.length).toBeGreaterThan(300);
    // Every call is committed once answered; the files are read as they are, WAL and all.
    const open = readDataDir().map(([file, bytes]) => [`${file} (open)`, bytes] as const);
    await t.app.close();
    closed = true;
    const files = [...open, ...readDataDir(), ['the log', Buffer.from(logged, 'utf8')] as const];
    const leaks: string[] = [];
    const seen = new Set<string>();
    for (const [where, bytes] of files) {
      const held = tokensIn(bytes, sent);
      for (const s of sent) {
        if (held.has(s.code)) leaks.push(`${s.shape}: ${s.code} in ${where}, sent as …${s.context}…`);
        if (s.marker && held.has(s.marker)) seen.add(s.marker);
      }
    }
    expect(leaks).toEqual([]);
    // The search finds what is there: every marker, sent beside its code, is somewhere.
    expect(sent.filter((s) => s.marker && !seen.has(s.marker)).map((s) => s.shape)).toEqual([]);
    expect(open.some(([file]) => file.endsWith('-wal (open)'))).toBe(true);
  });
});

/** Every file under DATA_DIR, recursively, with its bytes as they are now. */
function readDataDir(): (readonly [string, Buffer])[] {
  return fs
    .readdirSync(dataDir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const file = path.join(e.parentPath, e.name);
      return [path.relative(dataDir, file), fs.readFileSync(file)] as const;
    });
}

/**
 * Which of the codes and markers sent the bytes hold, as UTF-8 or UTF-16: every window of their
 * lengths over every run of letters and digits, looked up at once (one pass per file, not one per
 * code).
 */
function tokensIn(bytes: Buffer, sent: readonly Sent[]): Set<string> {
  const wanted = new Set(sent.flatMap((s) => (s.marker ? [s.code, s.marker] : [s.code])));
  const lengths = [...new Set([...wanted].map((w) => w.length))];
  const held = new Set<string>();
  const texts = [bytes.toString('latin1'), bytes.toString('utf16le'), bytes.subarray(1).toString('utf16le')];
  for (const text of texts) {
    for (const [run] of text.matchAll(/[A-Za-z0-9]{11,}/g)) {
      for (const length of lengths) {
        for (let i = 0; i + length <= run.length; i++) {
          const window = run.slice(i, i + length);
          if (wanted.has(window)) held.add(window);
        }
      }
    }
  }
  return held;
}
