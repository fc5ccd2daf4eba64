import net from 'node:net';
import { type CallDetail, type CallList, groups, type OperationDef } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CallRow } from '../src/store/index.js';
import { registerSchool, type TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

/**
 * An answer recorded by reference (store/call-answers.ts): every operation in every binding, taken,
 * refused and failed, sent to the real server over a socket; what History's call page, the JSON
 * export and free text show of each call's answer is held against the bytes that crossed the wire.
 * A success's answer (the same text for every call of its kind) is kept by reference; anything
 * else (a fault naming the input, a book, an answer masking an echoed code) keeps its own text.
 */

const NS = 'http://tempuri.org/';
const BINDINGS = ['soap11', 'soap12', 'http-get', 'http-post'] as const;
type WireBinding = (typeof BINDINGS)[number];

/** What came back over the socket: the status, the headers (names in lower case), the body's bytes. */
interface Wire {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** One request over a fresh connection, read to its end: the bytes as a client gets them. */
function exchange(port: number, request: Buffer): Promise<Wire> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', reject);
    socket.on('end', () => {
      const raw = Buffer.concat(chunks);
      const end = raw.indexOf('\r\n\r\n');
      const [statusLine = '', ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      let body: Buffer = raw.subarray(end + 4);
      if (headers['transfer-encoding'] === 'chunked') body = unchunk(body);
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
    socket.write(request);
  });
}

function unchunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    const size = Number.parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (!size) return Buffer.concat(parts);
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

const envelope = (binding: 'soap11' | 'soap12', inner: string) =>
  binding === 'soap11'
    ? `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>${inner}</soap:Body></soap:Envelope>`
    : `<?xml version="1.0" encoding="utf-8"?><soap12:Envelope xmlns:soap12="http://www.w3.org/2003/05/soap-envelope"><soap12:Body>${inner}</soap12:Body></soap12:Envelope>`;

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

interface Request {
  readonly method: string;
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

/** The request of `op` in `binding` as its clients send it (docs/bindings.md). */
function requestOf(
  op: OperationDef,
  binding: WireBinding,
  params: Readonly<Record<string, string>>,
  headers: Readonly<Record<string, string>> = {},
): Request {
  const group = groups.find((g) => g.operations.includes(op));
  if (!group) throw new Error(`no group for ${op.name}`);
  const form = new URLSearchParams(params).toString();
  switch (binding) {
    case 'soap11':
    case 'soap12': {
      const inner = `<${op.name} xmlns="${NS}">${Object.entries(params)
        .map(([k, v]) => `<${k}>${escapeXml(v)}</${k}>`)
        .join('')}</${op.name}>`;
      return {
        method: 'POST',
        path: group.path,
        headers:
          binding === 'soap11'
            ? { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}${op.name}"`, ...headers }
            : { 'content-type': `application/soap+xml; charset=utf-8; action="${NS}${op.name}"`, ...headers },
        body: envelope(binding, inner),
      };
    }
    case 'http-get':
      return { method: 'GET', path: `${group.path}/${op.name}?${form}`, headers };
    case 'http-post':
      return {
        method: 'POST',
        path: `${group.path}/${op.name}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: form,
      };
  }
}

function raw(request: Request): Buffer {
  const body = Buffer.from(request.body ?? '');
  let head = `${request.method} ${request.path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n`;
  for (const [name, value] of Object.entries(request.headers ?? {})) head += `${name}: ${value}\r\n`;
  if (request.body !== undefined) head += `Content-Length: ${body.length}\r\n`;
  return Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]);
}

/** A recorded answer read back: its status line, its headers as recorded, its body. */
function parseRecorded(text: string) {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  return {
    statusLine,
    headers: lines.map((line) => {
      const colon = line.indexOf(': ');
      return [line.slice(0, colon), line.slice(colon + 2)] as const;
    }),
    body: text.slice(end + 4),
  };
}

/**
 * The recorded answer is what was sent: the status, each header it keeps with the value sent, and
 * the body byte for byte (`body: false`: a book, which the record summarises).
 */
function expectAnswerAsSent(recorded: string, wire: Wire, label: string, body = true): void {
  const answer = parseRecorded(recorded);
  expect(answer.statusLine, label).toBe(`HTTP/1.1 ${wire.status}`);
  expect(answer.headers.length, `${label}: headers recorded`).toBeGreaterThan(0);
  for (const [name, value] of answer.headers)
    expect(wire.headers[name.toLowerCase()], `${label}: ${name}`).toBe(value);
  if (body) expect(Buffer.from(answer.body, 'utf8').equals(wire.body), `${label}: body`).toBe(true);
}

/** A PDF of one empty page, padded to `size` bytes. */
function pdf(size: number): Buffer {
  const head =
    '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\n';
  const tail = 'trailer<</Root 1 0 R>>\n%%EOF\n';
  return Buffer.concat([
    Buffer.from(head),
    Buffer.alloc(size - head.length - tail.length, '%'),
    Buffer.from(tail),
  ]);
}

const SCHOOL = 'https://school.example.org';
const opNamed = (name: string) => {
  const op = groups.flatMap((g) => g.operations).find((o) => o.name === name);
  if (!op) throw new Error(name);
  return op;
};

/** Each operation's parameters for a call that is taken, and for one its operation refuses. */
const OK_PARAMS: Record<string, Record<string, string>> = {
  AuthCode: { code: '4821', phone: '+447911123456' },
  GetBookPdfByTerm: { termId: 'T1', srid: 'S-1', classId: '7B' },
  SendNotificationType: { id: '17', baseUrlSchool: SCHOOL, TypeNotfication: 'homework' },
  SendMarkNotes: { id: '17', id_class: '7B', baseUrlSchool: SCHOOL },
  pushNoti: {},
};
const REFUSED_PARAMS: Record<string, Record<string, string>> = {
  AuthCode: { code: '4821', phone: 'not a phone' },
  GetBookPdfByTerm: { termId: 'T1', srid: 'S-1', classId: 'no such class' },
  SendNotificationType: { id: '17', baseUrlSchool: 'https://elsewhere.example.org', TypeNotfication: 'x' },
  SendMarkNotes: { id: '17', id_class: '7B', baseUrlSchool: 'https://elsewhere.example.org' },
};

interface Case {
  readonly label: string;
  readonly op: OperationDef;
  readonly binding: WireBinding;
  readonly request: Request;
  readonly outcome: 'ok' | 'client-error' | 'server-error';
  /** What the answer is: a success the same for every call of its kind, or not. */
  readonly byReference: boolean;
  /** The record summarises the body (a book). */
  readonly summarised?: boolean;
  /** A code the answer happens to hold as a word, masked in the record. */
  readonly echoed?: string;
  /** Makes the operation fail inside the server for this one call. */
  readonly fail?: (t: TestApp) => void;
}

/** A failure inside each operation (a dependency throwing), for a server error. */
const FAILURES: Record<string, (t: TestApp) => void> = {
  AuthCode: (t) =>
    vi.spyOn(t.app.smsDestinations, 'check').mockImplementationOnce(() => {
      throw new Error('destinations failed');
    }),
  GetBookPdfByTerm: (t) =>
    vi.spyOn(t.app.store.books, 'find').mockRejectedValueOnce(new Error('books failed')),
  SendNotificationType: (t) =>
    vi.spyOn(t.app.store.templates, 'forType').mockRejectedValueOnce(new Error('templates failed')),
  SendMarkNotes: (t) =>
    vi.spyOn(t.app.store.templates, 'forType').mockRejectedValueOnce(new Error('templates failed')),
  pushNoti: (t) =>
    vi.spyOn(t.app.outbox.deliveries, 'pendingPushes').mockRejectedValueOnce(new Error('outbox failed')),
};

/** pushNoti takes nothing its operation could refuse: refused by the door instead. */
function refusedPushNoti(binding: WireBinding): Request {
  const op = opNamed('pushNoti');
  const ok = requestOf(op, binding, {});
  switch (binding) {
    case 'soap11':
    case 'soap12':
      // XML that cannot be read, for the operation its headers name.
      return { ...ok, body: envelope(binding, `<pushNoti xmlns="${NS}">`) };
    case 'http-get':
      return { ...ok, path: ok.path.replace('/pushNoti', '/PushNoti') };
    case 'http-post':
      return { ...ok, headers: { 'content-type': 'text/plain' }, body: 'push' };
  }
}

function cases(etag: () => string): Case[] {
  const out: Case[] = [];
  for (const op of groups.flatMap((g) => g.operations)) {
    for (const binding of BINDINGS) {
      const book = op.name === 'GetBookPdfByTerm' && binding.startsWith('http');
      const at = `${op.name} ${binding}`;
      out.push({
        label: `${at} ok`,
        op,
        binding,
        request: requestOf(op, binding, OK_PARAMS[op.name] ?? {}),
        outcome: 'ok',
        byReference: !book,
        summarised: book,
      });
      out.push({
        label: `${at} client-error`,
        op,
        binding,
        request:
          op.name === 'pushNoti'
            ? refusedPushNoti(binding)
            : requestOf(op, binding, REFUSED_PARAMS[op.name] ?? {}),
        outcome: 'client-error',
        byReference: false,
      });
      out.push({
        label: `${at} server-error`,
        op,
        binding,
        request: requestOf(op, binding, OK_PARAMS[op.name] ?? {}),
        outcome: 'server-error',
        byReference: false,
        fail: FAILURES[op.name],
      });
    }
  }
  // The book's other answers over HTTP: a range of it, and not modified.
  const book = opNamed('GetBookPdfByTerm');
  for (const binding of ['http-get', 'http-post'] as const) {
    out.push({
      label: `GetBookPdfByTerm ${binding} ok, a range`,
      op: book,
      binding,
      request: requestOf(book, binding, OK_PARAMS.GetBookPdfByTerm ?? {}, { Range: 'bytes=0-99' }),
      outcome: 'ok',
      byReference: false,
      summarised: true,
    });
    out.push({
      label: `GetBookPdfByTerm ${binding} ok, not modified`,
      op: book,
      binding,
      get request() {
        return requestOf(book, binding, OK_PARAMS.GetBookPdfByTerm ?? {}, { 'If-None-Match': etag() });
      },
      outcome: 'ok',
      byReference: false,
      summarised: true,
    });
  }
  // A code that stands as a word in the success's answer: masked there, so that answer is the
  // call's own text, not the canonical one.
  const authCode = opNamed('AuthCode');
  for (const [binding, code] of [
    ['soap11', 'soap'],
    ['soap12', '2003'],
    ['http-get', 'private'],
    ['http-post', 'Cache'],
  ] as const) {
    out.push({
      label: `AuthCode ${binding} ok, the code ${code} in the answer`,
      op: authCode,
      binding,
      request: requestOf(authCode, binding, { code, phone: '+447911123456' }),
      outcome: 'ok',
      byReference: false,
      echoed: code,
    });
  }
  return out;
}

describe.each(DIALECTS)('answers recorded by reference (%s)', (dialect) => {
  let t: TestApp;
  let port: number;
  let etag = '';
  /** Each call the cases made, with the bytes it was answered with. */
  const sent: { case: Case; id: number; wire: Wire }[] = [];

  beforeAll(async () => {
    t = await startTestAppOn(dialect, { PARTITION_PERIOD: 'day', MAX_BOOK_BYTES: '65536' });
    await registerSchool(t.app);
    const uploaded = await t.inject({
      method: 'PUT',
      url: '/api/books/T1/7B?filename=maths.pdf',
      headers: { 'content-type': 'application/pdf' },
      payload: pdf(5000),
    });
    expect(uploaded.statusCode).toBe(200);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await t?.close();
  });

  const newestCall = async (): Promise<number> => {
    const list = (await t.inject({ method: 'GET', url: '/api/calls?limit=1' })).json() as CallList;
    const [call] = list.items;
    if (!call) throw new Error('no call recorded');
    return call.id;
  };
  const callPage = async (id: number): Promise<CallDetail> => {
    const res = await t.inject({ method: 'GET', url: `/api/calls/${id}` });
    expect(res.statusCode).toBe(200);
    return res.json() as CallDetail;
  };
  const stored = (id: number) =>
    t.app.store.db
      .selectFrom('calls')
      .select(['response', 'response_ref', 'response_bytes'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  it('shows every answer on the call page as it was sent, a success’s kept by reference', async () => {
    const published: CallRow[] = [];
    const listen = (rows: CallRow[]) => published.push(...rows);
    t.app.history.live.events.on('recorded', listen);
    try {
      for (const c of cases(() => etag)) {
        c.fail?.(t);
        const wire = await exchange(port, raw(c.request));
        if (c.label === 'GetBookPdfByTerm http-get ok') etag = wire.headers.etag ?? '';
        const id = await newestCall();
        const page = await callPage(id);
        // A method name in another case names no operation: recorded under none.
        const unnamed = c.label === 'pushNoti http-get client-error';
        expect(page.operation, c.label).toBe(unnamed ? null : c.op.name);
        expect(page.outcome, c.label).toBe(c.outcome);
        expect(page.binding, c.label).toBe(c.binding);
        sent.push({ case: c, id, wire });

        const row = await stored(id);
        if (c.byReference) {
          // Kept by reference: no text of its own, its size as sent.
          expect(row.response, c.label).toBe('');
          expect(row.response_ref, c.label).not.toBeNull();
        } else {
          expect(row.response_ref, c.label).toBeNull();
          expect(row.response, c.label).toBe(page.response);
        }
        expect(page.responseBytes, c.label).toBe(Buffer.byteLength(page.response));

        if (c.echoed) {
          // Masked where the answer holds the code, and that alone differs from what was sent.
          expect(page.response, c.label).not.toMatch(new RegExp(`\\b${c.echoed}\\b`));
          expect(page.response, c.label).toContain('***');
          expectAnswerAsSent(page.response.replaceAll('***', c.echoed), wire, c.label);
        } else {
          expectAnswerAsSent(page.response, wire, c.label, !c.summarised);
        }
        if (c.summarised) expect(parseRecorded(page.response).body, c.label).toMatch(/^\[.*\]$/);
      }
    } finally {
      t.app.history.live.events.off('recorded', listen);
    }
    // Each operation's success in each binding, and only those, by reference; one text for each.
    const refs = new Map<string, number>();
    for (const { case: c, id } of sent) {
      const ref = (await stored(id)).response_ref;
      if (!c.byReference) continue;
      const key = c.binding.startsWith('http') ? 'http' : `${c.binding} ${c.op.name}`;
      expect(refs.get(key) ?? ref, c.label).toBe(ref);
      refs.set(key, ref as number);
    }
    expect(refs.size).toBe(11);
    expect(new Set(refs.values()).size).toBe(11);
    // The live tail (here, and as other instances read it) carries the text too.
    for (const { case: c, id } of sent) {
      const row = published.find((r) => r.id === id);
      expect(row?.response, c.label).toBe((await callPage(id)).response);
    }
  });

  it('exports each answer as the call page shows it', async () => {
    const res = await t.inject({ method: 'GET', url: '/api/calls/export?format=json' });
    expect(res.statusCode).toBe(200);
    const exported = new Map((res.json() as CallDetail[]).map((c) => [c.id, c]));
    for (const { case: c, id, wire } of sent) {
      const call = exported.get(id);
      expect(call?.response, c.label).toBe((await callPage(id)).response);
      if (!c.echoed) expectAnswerAsSent(call?.response ?? '', wire, c.label, !c.summarised);
    }
  });

  it('finds an answer kept by reference by its text, in a list and in an export', async () => {
    const byRef = sent.filter((s) => s.case.byReference && s.case.op.name === 'SendMarkNotes');
    const want = byRef.filter((s) => s.case.binding.startsWith('soap')).map((s) => s.id);
    expect(want).toHaveLength(2);
    const list = (
      await t.inject({ method: 'GET', url: '/api/calls?q=sendmarknotesresponse&limit=50' })
    ).json() as CallList;
    expect(list.items.map((c) => c.id).sort()).toEqual([...want].sort());
    const exported = (
      await t.inject({ method: 'GET', url: '/api/calls/export?format=json&q=SendMarkNotesResponse' })
    ).json() as CallDetail[];
    expect(exported.map((c) => c.id).sort()).toEqual([...want].sort());
    // The HTTP bindings' success (no body) by its header, every operation's.
    const http = sent.filter((s) => s.case.byReference && s.case.binding.startsWith('http')).map((s) => s.id);
    const found = (
      await t.inject({ method: 'GET', url: '/api/calls?q=max-age%3D0&limit=100' })
    ).json() as CallList;
    for (const id of http) expect(found.items.map((c) => c.id)).toContain(id);
  });

  it('reads a call recorded before, with the answer’s text of its own, as it always did', async () => {
    const first = sent.find((s) => s.case.byReference && s.case.binding === 'soap12');
    if (!first) throw new Error('no call by reference');
    const row = await t.app.store.db
      .selectFrom('calls')
      .selectAll()
      .where('id', '=', first.id)
      .executeTakeFirstOrThrow();
    const text = (await callPage(first.id)).response;
    const { id: _id, ...copy } = row;
    const inserted = await t.app.store.db
      .insertInto('calls')
      .values({ ...copy, response: text, response_ref: null, request_id: 'recorded-before' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const old = await callPage(Number(inserted.id));
    expect(old.response).toBe(text);
    expectAnswerAsSent(old.response, first.wire, 'recorded before');
    const found = (
      await t.inject({ method: 'GET', url: `/api/calls?q=${first.case.op.name}Response&limit=50` })
    ).json() as CallList;
    expect(found.items.map((c) => c.id)).toEqual(expect.arrayContaining([first.id, Number(inserted.id)]));
  });
});
