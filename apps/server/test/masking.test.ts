/**
 * Auth codes never reach a call record, an export or the log, whatever the XML form of the SOAP
 * request or the spelling of the HTTP GET/POST parameter name
 * (docs/security.md#what-is-masked-and-where).
 * Property tests with a fixed seed: each case is a real request through the app.
 */
import { Writable } from 'node:stream';
import { MASK } from '@school/contract';
import fc from 'fast-check';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { CONSOLE_HEADERS, TEST_ADMIN, tempDataDir } from './helpers.js';

const NS = 'http://tempuri.org/';
const S11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const S12 = 'http://www.w3.org/2003/05/soap-envelope';
const PHONE = '+447911123456';
/** `MASKING_RUNS=5000` runs more cases. */
const RUNS = Number(process.env.MASKING_RUNS) || 0;

// --- the app, with a logger whose output the test reads -------------------------------------------

let app: FastifyInstance;
let removeData: () => void;
let logged = '';
let cookie: string | undefined;

beforeAll(async () => {
  const data = tempDataDir();
  removeData = data.remove;
  const config = loadConfig({
    DATA_DIR: data.dir,
    SQLITE_SYNCHRONOUS: 'NORMAL',
    AUTHCODE_LIMIT_PER_PHONE: 'off',
    AUTHCODE_LIMIT_PER_IP: 'off',
    AUTHCODE_LIMIT_PER_RANGE: 'off',
    ASMX_LIMIT_PER_IP: 'off',
    ADMIN_USERNAME: TEST_ADMIN.username,
    ADMIN_PASSWORD: TEST_ADMIN.password,
  });
  const stream = new Writable({
    write(chunk, _encoding, done) {
      logged += chunk.toString();
      done();
    },
  });
  app = await buildApp(config, { logger: { level: 'trace', stream } });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  removeData?.();
});

/** `app.inject` as the logged-in admin, from the console's page. */
async function asStaff(options: InjectOptions) {
  if (!cookie) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/session',
      headers: CONSOLE_HEADERS,
      payload: { username: TEST_ADMIN.username, password: TEST_ADMIN.password },
    });
    const session = res.cookies.find((c) => c.name === 'session');
    if (res.statusCode !== 200 || !session) throw new Error(`login failed: ${res.statusCode} ${res.body}`);
    cookie = `session=${session.value}`;
  }
  return app.inject({ ...options, headers: { ...CONSOLE_HEADERS, cookie, ...options.headers } });
}

/** Sends a request; checks it made exactly one record, and that the record holds no code. */
async function sendAndCheck(request: InjectOptions, code: string, expectedStatus: number | number[]) {
  const before = await app.history.count();
  const logMark = logged.length;
  const res = await app.inject(request);
  expect([expectedStatus].flat(), res.body).toContain(res.statusCode);
  expect(await app.history.count()).toBe(before + 1);
  const [row] = await app.history.list({ limit: 1 });
  if (!row) throw new Error('no record');
  const stored = await app.history.findById(row.id);
  for (const text of [JSON.stringify(row), JSON.stringify(stored)]) expect(text).not.toContain(code);
  expect(row.request).toContain(MASK);
  if (row.params) expect(JSON.parse(row.params).code).toBe(MASK);
  expect(logged.slice(logMark)).not.toContain(code);
  return res;
}

/** At the end: the exports, and the whole log, hold none of the codes sent. */
async function checkExportsAndLog(codes: readonly string[]) {
  const json = await asStaff({ method: 'GET', url: '/api/calls/export?format=json' });
  const csv = await asStaff({ method: 'GET', url: '/api/calls/export?format=csv' });
  expect(json.statusCode).toBe(200);
  expect(csv.statusCode).toBe(200);
  const rows = JSON.parse(json.body) as unknown[];
  expect(rows.length).toBeGreaterThanOrEqual(codes.length);
  await new Promise((resolve) => setImmediate(resolve));
  for (const code of codes) {
    expect(json.body).not.toContain(code);
    expect(csv.body).not.toContain(code);
    expect(logged).not.toContain(code);
  }
}

// --- generators ------------------------------------------------------------------------------------

/**
 * 6 to 16 letters and digits, with a digit and a letter that is no hex digit: such a code cannot be
 * a word of the envelope, a timestamp or an id in the log, so finding it anywhere means a leak.
 */
const codeArb = fc.stringMatching(/^[A-Za-z0-9]{6,16}$/).filter((c) => /[0-9]/.test(c) && /[g-zG-Z]/.test(c));

const ref = (ch: string, hex: boolean, upper: boolean) => {
  const n = ch.codePointAt(0) ?? 0;
  return hex ? `&#x${upper ? n.toString(16).toUpperCase() : n.toString(16)};` : `&#${n};`;
};

/** One piece of the code: plain, CDATA, decimal or hex character references, or a mix. */
const chunkArb = (chunk: string) =>
  fc.constantFrom('text', 'cdata', 'dec', 'hex', 'HEX', 'mixed').map((form) => {
    const chars = [...chunk];
    switch (form) {
      case 'cdata':
        return `<![CDATA[${chunk}]]>`;
      case 'dec':
        return chars.map((c) => ref(c, false, false)).join('');
      case 'hex':
      case 'HEX':
        return chars.map((c) => ref(c, true, form === 'HEX')).join('');
      case 'mixed':
        return chars.map((c, i) => (i % 2 === 0 ? ref(c, i % 4 === 0, false) : c)).join('');
      default:
        return chunk;
    }
  });

const SEPARATORS = ['', '<!-- x -->', '<!---->', '<!-- </code> -->', '<?pi a>b?>', '<?x?>', '<![CDATA[]]>'];

/** The code's characters cut in up to four pieces, each in its own form, split by comments and PIs. */
const contentArb = (code: string) =>
  fc
    .uniqueArray(fc.integer({ min: 1, max: code.length - 1 }), { maxLength: 3 })
    .chain((cuts) => {
      const at = [...cuts].sort((a, b) => a - b);
      const chunks = [0, ...at].map((start, i) => code.slice(start, at[i] ?? code.length));
      return fc.tuple(...chunks.map((c) => fc.tuple(fc.constantFrom(...SEPARATORS), chunkArb(c))));
    })
    .map((parts) => parts.map(([sep, text]) => sep + text).join(''));

const PREFIXES = ['n', 'ns1', 'tns', 'ü', 'é.x', '日本', 'a-b', 'Ω'];
const ATTRIBUTES = [' a="x>y"', " b='>'", ' c="&gt;&lt;"', ' i:type="d:string"', ' id="o1"', ' d="/>"'];
const WS = [' ', '\n', '\t', '  ', '\r\n '];

interface SoapCase {
  readonly code: string;
  readonly request: InjectOptions;
  readonly xml: string;
  /** The code element's content as written, and its end tag. */
  readonly content: string;
  readonly endTag: string;
}

const soapCaseArb: fc.Arbitrary<SoapCase> = codeArb.chain((code) =>
  fc
    .record({
      content: contentArb(code),
      soap12: fc.boolean(),
      envPrefix: fc.constantFrom('soap', 'SOAP-ENV', 'v', 'env', 'soap-env', 'ü', 's12'),
      // How the code element is qualified: the default namespace, the operation's prefix, its own
      // prefix (declared on it or on the envelope), or no namespace at all.
      qualify: fc.constantFrom('default', 'operation', 'own', 'envelope', 'none'),
      opPrefix: fc.constantFrom('', 'ns1', 'm'),
      codePrefix: fc.constantFrom(...PREFIXES),
      attrs: fc.subarray(ATTRIBUTES),
      attrSpace: fc.constantFrom(...WS),
      tagSpace: fc.constantFrom('', ...WS),
      pretty: fc.boolean(),
      header: fc.constantFrom('', 'empty', 'some'),
      declaration: fc.constantFrom('', '<?xml version="1.0" encoding="utf-8"?>', "<?xml version='1.0'?>\n"),
      codeFirst: fc.boolean(),
      action: fc.constantFrom('quoted', 'plain', 'none'),
      charset: fc.boolean(),
      trailing: fc.constantFrom('', '\r\n', '\n'),
    })
    .map((o): SoapCase => {
      const nl = o.pretty ? '\n  ' : '';
      const env = o.envPrefix;
      const op = o.qualify === 'none' && o.opPrefix === '' ? 'ns1' : o.opPrefix;
      const opTag = op ? `${op}:AuthCode` : 'AuthCode';
      const opDecl = op ? ` xmlns:${op}="${NS}"` : ` xmlns="${NS}"`;
      let codeTag = 'code';
      let codeDecl = '';
      let envDecl = '';
      if (o.qualify === 'operation' && op) codeTag = `${op}:code`;
      else if (o.qualify === 'own') {
        codeTag = `${o.codePrefix}:code`;
        codeDecl = ` xmlns:${o.codePrefix}="${NS}"`;
      } else if (o.qualify === 'envelope') {
        const prefix = o.codePrefix === env ? `${env}2` : o.codePrefix;
        codeTag = `${prefix}:code`;
        envDecl = ` xmlns:${prefix}="${NS}"`;
      }
      // A parameter in no namespace is accepted (docs/wire-contract.md#what-is-read-from-the-envelope):
      // `none` relies on that.
      const phoneTag = op ? `${op}:phone` : 'phone';
      const attrs = o.attrs.map((a) => a.replace(/^ /, o.attrSpace)).join('');
      const endTag = `</${codeTag}${o.tagSpace}>`;
      const codeElement = `<${codeTag}${codeDecl}${attrs}${o.tagSpace}>${o.content}${endTag}`;
      const phoneElement = `<${phoneTag}>${PHONE}</${phoneTag}>`;
      const params = o.codeFirst ? [codeElement, phoneElement] : [phoneElement, codeElement];
      const header =
        o.header === 'empty'
          ? `<${env}:Header />`
          : o.header === 'some'
            ? `<${env}:Header><h:t xmlns:h="urn:x">${code.slice(0, 3)}</h:t></${env}:Header>`
            : '';
      const xml =
        `${o.declaration}<${env}:Envelope xmlns:${env}="${o.soap12 ? S12 : S11}" xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns:d="http://www.w3.org/2001/XMLSchema"${envDecl}>` +
        `${nl}${header}<${env}:Body>${nl}<${opTag}${opDecl} id="o0">${nl}${params.join(nl)}${nl}</${opTag}>${nl}</${env}:Body></${env}:Envelope>${o.trailing}`;
      const headers: Record<string, string> = o.soap12
        ? {
            'content-type': `application/soap+xml${o.charset ? '; charset=utf-8' : ''}${o.action === 'none' ? '' : `; action="${NS}AuthCode"`}`,
          }
        : { 'content-type': `text/xml${o.charset ? '; charset=utf-8' : ''}` };
      if (!o.soap12 && o.action !== 'none') {
        headers.soapaction = o.action === 'quoted' ? `"${NS}AuthCode"` : `${NS}AuthCode`;
      }
      return {
        code,
        xml,
        content: o.content,
        endTag,
        request: { method: 'POST', url: '/AuthCodeSending.asmx', headers, payload: xml },
      };
    }),
);

const pct = (ch: string, upper: boolean) => {
  const hex = (ch.codePointAt(0) ?? 0).toString(16).padStart(2, '0');
  return `%${upper ? hex.toUpperCase() : hex}`;
};

/** A parameter name spelled any way the bindings read as the same: any case, any escapes. */
const spellingArb = (name: string) =>
  fc
    .tuple(
      ...[...name].map((ch) =>
        fc.constantFrom('lower', 'upper', 'pct', 'PCT', 'upct').map((how) => {
          const c = how === 'upper' || how === 'upct' ? ch.toUpperCase() : ch;
          return how === 'lower' || how === 'upper' ? c : pct(c, how !== 'pct');
        }),
      ),
    )
    .map((chars) => chars.join(''));

interface HttpCase {
  readonly code: string;
  readonly request: InjectOptions;
}

const httpCaseArb: fc.Arbitrary<HttpCase> = codeArb.chain((code) =>
  fc
    .record({
      post: fc.boolean(),
      codeName: spellingArb('code'),
      secondName: spellingArb('code'),
      phoneName: spellingArb('phone'),
      encodeValue: fc.boolean(),
      duplicate: fc.constantFrom('none', 'before-phone', 'last'),
      extra: fc.constantFrom('', 'x=1', 'codes=2', 'a=%ZZ', '%=%', 'c%6fde%=3'),
      codeFirst: fc.boolean(),
      path: fc.constantFrom('/AuthCodeSending.asmx/AuthCode', '/authcodesending.ASMX/AuthCode'),
    })
    .map((o): HttpCase => {
      const value = o.encodeValue ? [...code].map((c, i) => (i % 2 ? c : pct(c, true))).join('') : code;
      const pairs = [`${o.codeName}=${value}`, `${o.phoneName}=%2B${PHONE.slice(1)}`];
      if (!o.codeFirst) pairs.reverse();
      // A second code after the first: the bindings read the first, and both are masked.
      if (o.duplicate === 'before-phone') pairs.splice(1, 0, `${o.secondName}=${code}`);
      if (o.duplicate === 'last') pairs.push(`${o.secondName}=${code}`);
      if (o.extra) pairs.splice(1, 0, o.extra);
      const form = pairs.join('&');
      return {
        code,
        request: o.post
          ? {
              method: 'POST',
              url: o.path,
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              payload: form,
            }
          : { method: 'GET', url: `${o.path}?${form}` },
      };
    }),
);

// --- the properties --------------------------------------------------------------------------------

describe('auth codes are masked everywhere', () => {
  it('in SOAP 1.1 and 1.2 requests, whatever the XML form of the code', async () => {
    const codes: string[] = [];
    await fc.assert(
      fc.asyncProperty(soapCaseArb, async ({ code, request }) => {
        codes.push(code);
        await sendAndCheck(request, code, 200);
      }),
      { seed: 42, numRuns: RUNS || 300 },
    );
    await checkExportsAndLog(codes);
  });

  it('in the HTTP GET and POST bindings, whatever the spelling of the name', async () => {
    const codes: string[] = [];
    await fc.assert(
      fc.asyncProperty(httpCaseArb, async ({ code, request }) => {
        codes.push(code);
        await sendAndCheck(request, code, 200);
      }),
      { seed: 42, numRuns: RUNS || 300 },
    );
    await checkExportsAndLog(codes);
  });

  it('in SOAP requests that fail, malformed ones included', async () => {
    const codes: string[] = [];
    await fc.assert(
      fc.asyncProperty(
        soapCaseArb,
        fc.constantFrom('truncate', 'bad-phone', 'space', 'unclosed', 'mismatched'),
        async ({ code, request, xml, content, endTag }, how) => {
          codes.push(code);
          const at = xml.indexOf(`>${content}${endTag}`) + 1;
          expect(at).toBeGreaterThan(0);
          const end = at + content.length;
          const broken =
            how === 'truncate'
              ? xml.slice(0, end)
              : how === 'bad-phone'
                ? xml.replace(PHONE, 'not a phone')
                : how === 'space'
                  ? `${xml.slice(0, at)} ${xml.slice(at)}`
                  : how === 'unclosed'
                    ? xml.slice(0, end) + xml.slice(end + endTag.length)
                    : `${xml.slice(0, end)}</other>${xml.slice(end + endTag.length)}`;
          // 400 with an empty body for XML that cannot be read, else a 500 fault
          // (docs/faults.md#soap-faults-by-case).
          await sendAndCheck({ ...request, payload: broken }, code, [400, 500]);
        },
      ),
      { seed: 42, numRuns: RUNS || 150 },
    );
    await checkExportsAndLog(codes);
  });

  it('in a body sent to the other kind of endpoint', async () => {
    const envelope = `<soap:Envelope xmlns:soap="${S11}"><soap:Body><AuthCode xmlns="${NS}"><code><![CDATA[Hq5521Zt]]></code><phone>${PHONE}</phone></AuthCode></soap:Body></soap:Envelope>`;
    // An envelope posted to the HTTP POST binding: not a form, refused, recorded without the code.
    await sendAndCheck(
      {
        method: 'POST',
        url: '/AuthCodeSending.asmx/AuthCode',
        headers: { 'content-type': 'text/xml; charset=utf-8' },
        payload: envelope,
      },
      'Hq5521Zt',
      [500],
    );
    // A form posted to the SOAP endpoint as XML: not XML, a fault, recorded without the code.
    await sendAndCheck(
      {
        method: 'POST',
        url: '/AuthCodeSending.asmx',
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
        payload: `%63ode=Hq5521Zt&phone=%2B${PHONE.slice(1)}`,
      },
      'Hq5521Zt',
      [400, 500],
    );
    await checkExportsAndLog(['Hq5521Zt']);
  });

  it('in the URL of a console call', async () => {
    const res = await asStaff({
      method: 'POST',
      url: '/api/operations/AuthCode?code=Qz81516Xw&%43ODE=Qz81516Xw',
      payload: { code: 'Qz81516Xw', phone: PHONE },
    });
    expect(res.statusCode).toBe(200);
    const stored = await app.history.findById(res.json().id);
    expect(stored?.request).toContain('/api/operations/AuthCode?code=***&%43ODE=***');
    expect(JSON.stringify(stored)).not.toContain('Qz81516Xw');
    await checkExportsAndLog(['Qz81516Xw']);
  });

  it('in the log of a request no route takes', async () => {
    await app.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode/x?%63ode=Kp90817263' });
    await app.inject({ method: 'GET', url: '/nowhere?CODE=Kp90817263' });
    expect(logged).not.toContain('Kp90817263');
  });
});
