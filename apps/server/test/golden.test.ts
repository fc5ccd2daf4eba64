/**
 * Golden-file tests of the `.asmx` endpoints: one folder per case under `test/golden/`, each sent
 * through `app.inject()` to one app, and the answer compared with what docs/wire-contract.md,
 * docs/bindings.md and docs/faults.md say (docs/architecture.md#tests). The expected files were
 * written by hand from those pages; where the server disagrees, the case fails and the server is
 * what gets fixed.
 *
 * Case folders are named `<binding>-<client, rule or status>-<what>`, e.g. `soap11-ksoap2-authcode`,
 * `soap12-fault-missing-body`, `soap11-400-doctype`, `http-get-missing-parameter`; documents are
 * `<document>-<what>`, e.g. `wsdl-path-as-spelled`. A case folder holds:
 *
 * - `request.http`: a raw HTTP/1.1 request. Request line and header lines (LF or CRLF line ends),
 *   then an empty line, then the body. The body is every byte after the first empty line, taken
 *   verbatim: nothing is trimmed or added, so a ksoap2 body keeps its trailing CRLF, a PHP body its
 *   trailing LF, and a .NET body ends at `</soap:Envelope>` (the file has no final newline). When the
 *   request carries `Content-Length`, it must equal the body's byte length: that catches an editor
 *   adding or stripping a final newline. Header lines are sent as written; `Host` defaults to
 *   `localhost`.
 * - `response.http`: the expected status line (the code is compared, the reason phrase is for the
 *   reader), the headers that must match (only those listed, name case-insensitively, value
 *   exactly; `Date`, `Content-Length` and the like are not listed), an empty line, and the body,
 *   compared byte for byte. Nothing after the empty line means the body must be empty.
 * - `record.json` (optional): the call record the exchange must leave, `{binding, operation,
 *   outcome, status}` and optionally `params` (the recorded parameters, secrets masked); only the
 *   fields given are compared. With it the store must grow by exactly one call; without it, by none.
 *   A request to an operation endpoint (`POST /X.asmx`, another verb on `/X.asmx`, anything on
 *   `/X.asmx/{Op}`) must have one: every call is recorded (docs/operations.md#call-records).
 *
 * `UPDATE_GOLDEN=1` rewrites `response.http` from the actual response, keeping the header names
 * listed. Never commit its output unchecked: the documented bytes win over the server's.
 *
 * Files ending in `.http` are excluded from biome, so formatting never touches their bytes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastCall, registerSchool, startTestApp, type TestApp } from './helpers.js';

const GOLDEN_DIR = path.join(import.meta.dirname, 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

/** Header names written by UPDATE_GOLDEN into a new response.http, when present in the response. */
const DEFAULT_HEADERS = ['Content-Type', 'Cache-Control', 'Allow', 'Retry-After'];
const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;
type Method = (typeof HTTP_METHODS)[number];

interface RawMessage {
  /** The first line. */
  readonly start: string;
  /** Header lines in order, names as written. */
  readonly headers: ReadonlyArray<readonly [name: string, value: string]>;
  readonly body: Buffer;
}

interface RecordExpectation {
  readonly binding?: string;
  readonly operation?: string | null;
  readonly outcome?: string;
  readonly status?: number;
  readonly params?: Record<string, string> | null;
}

/** Splits an HTTP message at the first empty line; the body is kept byte for byte. */
function parseMessage(file: string): RawMessage {
  const bytes = fs.readFileSync(file);
  const text = bytes.toString('latin1');
  const end = /\r?\n\r?\n/.exec(text);
  if (!end) throw new Error(`${file}: no empty line between the head and the body`);
  const lines = text.slice(0, end.index).split(/\r?\n/);
  const [start = '', ...headerLines] = lines;
  const headers = headerLines.map((line): [string, string] => {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`${file}: not a header line: ${JSON.stringify(line)}`);
    // The head is ASCII in practice; latin1 round-trips any byte exactly.
    return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
  });
  return { start, headers, body: bytes.subarray(end.index + end[0].length) };
}

function parseRequestLine(file: string, line: string): { method: Method; url: string } {
  const m = /^([A-Z]+) (\S+) HTTP\/1\.1$/.exec(line);
  const method = m?.[1] as Method | undefined;
  if (!m || !method || !HTTP_METHODS.includes(method) || !m[2]) {
    throw new Error(`${file}: not a request line: ${JSON.stringify(line)}`);
  }
  return { method, url: m[2] };
}

function parseStatusLine(file: string, line: string): number {
  const m = /^HTTP\/1\.1 (\d{3})(?: .*)?$/.exec(line);
  if (!m) throw new Error(`${file}: not a status line: ${JSON.stringify(line)}`);
  return Number(m[1]);
}

/** Whether a request reaches an operation, and so must leave a call record. */
function targetsOperation(method: Method, url: string): boolean {
  const m = /^\/[^/?#]+\.asmx(\/[^?#]+)?(?:[?#]|$)/i.exec(url);
  if (!m) return false;
  // GET and HEAD on the group's own path are the WSDL, DISCO and help pages.
  return m[1] !== undefined || (method !== 'GET' && method !== 'HEAD');
}

function discoverCases(): string[] {
  if (!fs.existsSync(GOLDEN_DIR)) return [];
  return fs
    .readdirSync(GOLDEN_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

const cases = discoverCases();

describe('golden files (asmx-compat.md)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
    // The notification cases send for this school; it must be registered.
    await registerSchool(t.app);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('has cases to run', () => {
    expect(cases.length).toBeGreaterThan(0);
  });

  for (const name of cases) {
    it(name, async () => {
      const dir = path.join(GOLDEN_DIR, name);
      const requestFile = path.join(dir, 'request.http');
      const responseFile = path.join(dir, 'response.http');
      const recordFile = path.join(dir, 'record.json');

      const request = parseMessage(requestFile);
      const { method, url } = parseRequestLine(requestFile, request.start);
      const headers: Record<string, string> = {};
      for (const [header, value] of request.headers) {
        const key = header.toLowerCase();
        headers[key] = key in headers ? `${headers[key]}, ${value}` : value;
      }
      headers.host ??= 'localhost';
      if (headers['content-length'] !== undefined) {
        expect(
          Number(headers['content-length']),
          `${name}: Content-Length against the body in request.http`,
        ).toBe(request.body.length);
      }
      const record: RecordExpectation | undefined = fs.existsSync(recordFile)
        ? (JSON.parse(fs.readFileSync(recordFile, 'utf8')) as RecordExpectation)
        : undefined;
      if (targetsOperation(method, url)) {
        expect(record, `${name}: a request to an operation endpoint needs a record.json`).toBeDefined();
      }

      const before = await t.app.history.count();
      const res = await t.app.inject({
        method,
        url,
        headers,
        ...(request.body.length > 0 || headers['content-length'] !== undefined
          ? { payload: request.body }
          : {}),
      });
      const after = await t.app.history.count();

      if (UPDATE) {
        const names = fs.existsSync(responseFile)
          ? parseMessage(responseFile).headers.map(([header]) => header)
          : DEFAULT_HEADERS.filter((header) => res.headers[header.toLowerCase()] !== undefined);
        const head = [
          `HTTP/1.1 ${res.statusCode} ${res.statusMessage}`,
          ...names.map((header) => `${header}: ${String(res.headers[header.toLowerCase()] ?? '')}`),
        ].join('\n');
        fs.writeFileSync(responseFile, Buffer.concat([Buffer.from(`${head}\n\n`, 'latin1'), res.rawPayload]));
      }

      const expected = parseMessage(responseFile);
      const status = parseStatusLine(responseFile, expected.start);
      expect.soft(res.statusCode, `${name}: status`).toBe(status);

      const wanted: Record<string, string> = {};
      const got: Record<string, string | undefined> = {};
      for (const [header, value] of expected.headers) {
        wanted[header] = value;
        const actual = res.headers[header.toLowerCase()];
        got[header] =
          actual === undefined ? undefined : Array.isArray(actual) ? actual.join(', ') : String(actual);
      }
      expect.soft(got, `${name}: headers`).toEqual(wanted);

      // A readable diff first, then the bytes themselves (a BOM or a stray byte shows only there).
      expect.soft(res.rawPayload.toString('utf8'), `${name}: body`).toBe(expected.body.toString('utf8'));
      expect.soft(res.rawPayload.equals(expected.body), `${name}: body bytes`).toBe(true);

      if (record === undefined) {
        expect.soft(after - before, `${name}: call records written`).toBe(0);
        return;
      }
      expect(after - before, `${name}: call records written`).toBe(1);
      const row = await lastCall(t.app);
      const actualRecord: Record<string, unknown> = {};
      const wantedRecord: Record<string, unknown> = {};
      for (const key of ['binding', 'operation', 'outcome', 'status'] as const) {
        if (key in record) {
          wantedRecord[key] = record[key];
          actualRecord[key] = row[key];
        }
      }
      if ('params' in record) {
        wantedRecord.params = record.params;
        actualRecord.params = row.params === null ? null : JSON.parse(row.params);
      }
      expect.soft(actualRecord, `${name}: call record`).toEqual(wantedRecord);
    });
  }
});
