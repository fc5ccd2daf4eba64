import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { CallDetail, CallList, OperationResult, Problem, ServiceInfo, Stats } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALL_T0, callRow, startTestApp, type TestApp, tempDataDir } from './helpers.js';

const HOUR = 3_600_000;
const T0 = CALL_T0;

const call = callRow;

/** RFC 4180 CSV (quoted cells may hold commas, quotes and line breaks) into rows of cells. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      rows.push([...row, cell]);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  if (cell !== '' || row.length > 0) rows.push([...row, cell]);
  return rows;
}

describe('console API', () => {
  let t: TestApp;
  const get = async <T>(url: string) => {
    const res = await t.inject({ method: 'GET', url });
    return { status: res.statusCode, body: res.json() as T, headers: res.headers };
  };

  beforeAll(async () => {
    t = await startTestApp();
    // 30 calls an hour apart, alternating bindings and outcomes, plus a few distinctive ones.
    for (let i = 0; i < 30; i++) {
      await t.app.recorder.record(
        call({
          at: T0 + i * HOUR,
          binding: i % 2 === 0 ? 'soap11' : 'http-get',
          outcome: i % 3 === 0 ? 'client-error' : 'ok',
          status: i % 3 === 0 ? 400 : 200,
          caller_ip: i < 10 ? '198.51.100.7' : '203.0.113.1',
        }),
      );
    }
    await t.app.recorder.record(
      call({
        at: T0 + 5 * HOUR,
        group_name: 'NotificationNotes',
        operation: 'SendMarkNotes',
        params: JSON.stringify({ id: '88', id_class: '7B', baseUrlSchool: 'https://needle.example.org/' }),
      }),
    );
  });
  afterAll(() => t.close());

  describe('POST /api/operations/{name}', () => {
    it('runs the operation as a console call and answers its id', async () => {
      const res = await t.inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: '4821', phone: '+44 7911 123456' },
      });
      expect(res.statusCode).toBe(200);
      const result = res.json() as OperationResult;
      expect(result).toMatchObject({ outcome: 'ok', status: 200, message: 'SMS queued to +447911123456.' });
      const detail = (await get<CallDetail>(`/api/calls/${result.id}`)).body;
      expect(detail).toMatchObject({
        binding: 'console',
        operation: 'AuthCode',
        group: 'AuthCodeSending',
        outcome: 'ok',
        params: { code: '***', phone: '+447911123456' },
      });
      expect(detail.request).toContain('POST /api/operations/AuthCode HTTP/1.1');
      expect(detail.request).not.toContain('4821');
    });

    it('answers bad input with a problem naming the field and the recorded call', async () => {
      const res = await t.inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: '4821', phone: 'nope' },
      });
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      const body = res.json() as Problem;
      expect(body).toMatchObject({ status: 400, title: 'Invalid request' });
      expect(body.detail).toMatch(/^Invalid phone: 'nope' is not a valid phone number/);
      expect(body.errors?.phone).toBe(body.detail);
      const recorded = (await get<CallDetail>(`/api/calls/${body.callId}`)).body;
      expect(recorded).toMatchObject({
        binding: 'console',
        outcome: 'client-error',
        status: 400,
        error: body.detail,
      });
    });

    it('says a missing parameter, a non-string value, no book, and an unknown operation plainly', async () => {
      const missing = await t.inject({
        method: 'POST',
        url: '/api/operations/SendMarkNotes',
        payload: { id: '1' },
      });
      expect(missing.json()).toMatchObject({ status: 400, detail: 'Missing parameter: id_class.' });
      const wrongType = await t.inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: 1234, phone: '+447911123456' },
      });
      expect(wrongType.json()).toMatchObject({
        status: 400,
        errors: { code: 'Invalid code: it must be a string.' },
      });
      const book = await t.inject({
        method: 'POST',
        url: '/api/operations/GetBookPdfByTerm',
        payload: { termId: 'T1', srid: 'S', classId: '7B' },
      });
      expect(book.statusCode).toBe(404);
      expect(book.json()).toMatchObject({ detail: "No book exists for term 'T1' and class '7B'." });
      const unknown = await t.inject({ method: 'POST', url: '/api/operations/DropTables', payload: {} });
      expect(unknown.statusCode).toBe(404);
      expect(typeof (unknown.json() as Problem).callId).toBe('number');
      const push = await t.inject({ method: 'POST', url: '/api/operations/pushNoti' });
      expect(push.statusCode).toBe(200);
    });
  });

  describe('GET /api/calls', () => {
    it('lists newest first with keyset paging until the last page', async () => {
      const seen: number[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const url: string = `/api/calls?limit=7&to=2026-11-03T00:00:00Z${cursor ? `&cursor=${cursor}` : ''}`;
        const { status, body } = await get<CallList>(url);
        expect(status).toBe(200);
        seen.push(...body.items.map((c) => Date.parse(c.at)));
        cursor = body.nextCursor;
        pages++;
      } while (cursor && pages < 10);
      expect(seen).toHaveLength(31);
      expect(pages).toBe(5);
      expect([...seen].sort((a, b) => b - a)).toEqual(seen);
    });

    it('filters by operation, binding, outcome, time range, caller and free text', async () => {
      const count = async (query: string) =>
        (
          await get<CallList>(
            `/api/calls?limit=200&${query.includes('to=') ? '' : 'to=2026-11-03T00:00:00Z&'}${query}`,
          )
        ).body.items.length;
      expect(await count('operation=SendMarkNotes')).toBe(1);
      expect(await count('binding=http-get')).toBe(15);
      expect(await count('outcome=client-error')).toBe(10);
      // `from` inclusive, `to` exclusive.
      expect(await count('from=2026-11-01T12:00:00Z&to=2026-11-01T15:00:00Z')).toBe(3);
      expect(await count('from=2026-11-01T15:00:00Z&to=2026-11-01T15:00:00.001Z')).toBe(2);
      expect(await count('ip=198.51.100.7')).toBe(10);
      expect(await count('q=NEEDLE.example')).toBe(1);
      expect(await count('q=100%25')).toBe(0);
      expect(await count('binding=soap11&outcome=client-error')).toBe(5);
    });

    it('finds a phone number typed as a person says it, whatever the spacing or national 0', async () => {
      const sent = await t.app.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=5521&phone=%2B447911155502',
      });
      expect(sent.statusCode).toBe(200);
      for (const typed of ['07911 155502', '+44 7911 155502', '(0)7911-155-502', '+447911155502']) {
        const { body } = await get<CallList>(`/api/calls?limit=5&q=${encodeURIComponent(typed)}`);
        expect(
          body.items.map((c) => c.params?.phone),
          typed,
        ).toEqual(['+447911155502']);
      }
    });

    it('refuses bad filters and cursors with a problem', async () => {
      for (const query of ['binding=fax', 'limit=0', 'from=yesterday', 'cursor=abc']) {
        const res = await t.inject({ method: 'GET', url: `/api/calls?${query}` });
        expect(res.statusCode, query).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(Object.keys((res.json() as Problem).errors ?? {}).length).toBeGreaterThan(0);
      }
    });

    it('answers 404 for a call that does not exist', async () => {
      const { status, body } = await get<Problem>('/api/calls/999999');
      expect(status).toBe(404);
      expect(body.detail).toBe('There is no call 999999.');
    });
  });

  describe('exports', () => {
    it('streams CSV of what is filtered, as a download', async () => {
      await t.app.recorder.record(
        call({
          at: T0 + 40 * HOUR,
          operation: 'SendNotificationType',
          params: JSON.stringify({ id: '=HYPERLINK("x")' }),
        }),
      );
      const res = await t.inject({
        method: 'GET',
        url: '/api/calls/export?format=csv&operation=SendNotificationType',
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.headers['content-disposition']).toMatch(/^attachment; filename="calls-\d{8}T\d{6}\.csv"$/);
      const lines = res.body.trimEnd().split('\r\n');
      expect(lines[0]).toBe(
        'id,at,group,operation,binding,callerIp,userAgent,params,outcome,status,error,durationMs',
      );
      expect(lines).toHaveLength(2);
      // A formula inside a cell (not at its start) is left as it is; the cell is quoted for its quotes.
      expect(lines[1]).toContain(',"{""id"":""=HYPERLINK(\\""x\\"")""}",');
    });

    it('neutralises every cell a spreadsheet would run as a formula, and only those', async () => {
      // Parameters, error text and User-Agent come from callers: each starts with one of the
      // characters that make Excel, LibreOffice or Google Sheets read a cell as a formula. (The
      // parameters column is stored JSON, an object today; the export guards it as any other text.)
      const ip = '192.0.2.66';
      const hostile = new Map<number, { params: string; error: string; user_agent: string }>();
      for (const [i, start] of ['=', '+', '-', '@', '\t', '\r'].entries()) {
        const cells = {
          params: `${start}SUM(1,2)`,
          error: `${start}cmd|' /C calc'!A0`,
          user_agent: `${start}HYPERLINK("http://evil.example/","x")`,
        };
        const id = await t.app.recorder.record(call({ at: T0 + (60 + i) * HOUR, caller_ip: ip, ...cells }));
        hostile.set(id, cells);
      }
      // Ordinary cells, some with a formula character later on, one already starting with an apostrophe.
      const ordinary = {
        params: JSON.stringify({ id: '=1', phone: '+447911123456' }),
        error: "Invalid phone: '+44' is not a valid phone number.",
        user_agent: "'=quoted already",
      };
      const plainId = await t.app.recorder.record(call({ at: T0 + 70 * HOUR, caller_ip: ip, ...ordinary }));
      const bare = await t.app.recorder.record(
        call({
          at: T0 + 71 * HOUR,
          caller_ip: ip,
          params: null,
          error: null,
          user_agent: 'Mozilla/5.0 (x=1; y)',
        }),
      );

      const res = await t.inject({ method: 'GET', url: `/api/calls/export?format=csv&ip=${ip}` });
      expect(res.statusCode).toBe(200);
      const [header, ...rows] = parseCsv(res.body);
      const columns = header ?? [];
      const byId = new Map(
        rows.map((cells) => {
          const record = Object.fromEntries(columns.map((c, i) => [c, cells[i]]));
          return [Number(record.id), record];
        }),
      );
      expect([...byId.keys()].sort((a, b) => a - b)).toEqual([...hostile.keys(), plainId, bare]);

      for (const [id, cells] of hostile) {
        expect(byId.get(id), `call ${id}`).toMatchObject({
          params: `'${cells.params}`,
          error: `'${cells.error}`,
          userAgent: `'${cells.user_agent}`,
          // Cells from the server are untouched.
          group: 'AuthCodeSending',
          operation: 'AuthCode',
          callerIp: ip,
          outcome: 'ok',
        });
      }
      expect(byId.get(plainId)).toMatchObject({
        params: ordinary.params,
        error: ordinary.error,
        userAgent: ordinary.user_agent,
      });
      expect(byId.get(bare)).toMatchObject({ params: '', error: '', userAgent: 'Mozilla/5.0 (x=1; y)' });

      // As written: the apostrophe goes inside the quotes, a CR is quoted, a tab need not be.
      const lineOf = (id: number) => res.body.split('\r\n').find((l) => l.startsWith(`${id},`)) ?? '';
      const [equals, , , , tab] = [...hostile.keys()];
      expect(lineOf(equals as number)).toContain(
        `,"'=HYPERLINK(""http://evil.example/"",""x"")","'=SUM(1,2)",ok,200,'=cmd|' /C calc'!A0,1.5`,
      );
      expect(lineOf(tab as number)).toContain(`,'\tcmd|' /C calc'!A0,`);
      expect(res.body).toContain(`,"'\rSUM(1,2)",`);
    });

    it('streams JSON with raw messages', async () => {
      const res = await t.inject({ method: 'GET', url: '/api/calls/export?format=json&ip=198.51.100.7' });
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      const rows = res.json() as CallDetail[];
      expect(rows).toHaveLength(10);
      expect(rows[0]?.request).toContain('POST /AuthCodeSending.asmx');
      const empty = await t.inject({ method: 'GET', url: '/api/calls/export?format=json&ip=192.0.2.99' });
      expect(empty.json()).toEqual([]);
    });
  });

  describe('GET /api/stats', () => {
    it('counts per bucket, operation and outcome', async () => {
      const { body } = await get<Stats>(
        '/api/stats?from=2026-11-01T10:00:00Z&to=2026-11-01T13:00:00Z&bucket=hour',
      );
      expect(body.bucket).toBe('hour');
      expect(body.rows).toEqual([
        { bucket: '2026-11-01T10:00:00.000Z', operation: 'AuthCode', outcome: 'client-error', count: 1 },
        { bucket: '2026-11-01T11:00:00.000Z', operation: 'AuthCode', outcome: 'ok', count: 1 },
        { bucket: '2026-11-01T12:00:00.000Z', operation: 'AuthCode', outcome: 'ok', count: 1 },
      ]);
      const day = await get<Stats>('/api/stats?from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z&bucket=day');
      expect(day.body.rows.reduce((n, r) => n + r.count, 0)).toBe(15);
    });

    it('refuses periods with too many buckets', async () => {
      const res = await t.inject({
        method: 'GET',
        url: '/api/stats?from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&bucket=minute',
      });
      expect(res.statusCode).toBe(400);
    });
  });

  it('GET /api/service describes the endpoints', async () => {
    // A host name the server answers for (ALLOWED_HOSTS) and whose origin the session's requests carry.
    const other = await startTestApp({ ALLOWED_HOSTS: 'sms.example.org,localhost' });
    const { body } = await other
      .inject({
        method: 'GET',
        url: '/api/service',
        headers: { host: 'sms.example.org', origin: 'http://sms.example.org' },
      })
      .then((r) => ({ body: r.json() as ServiceInfo }))
      .finally(() => other.close());
    expect(body.namespace).toBe('http://tempuri.org/');
    expect(body.groups.map((g) => g.wsdl)).toContain('http://sms.example.org/BookPdf.asmx?wsdl');
    expect(body.groups.flatMap((g) => g.operations.map((o) => o.name))).toHaveLength(5);
  });

  it('publishes an OpenAPI document generated from the routes, and its docs page', async () => {
    const { status, body } = await get<{ openapi: string; paths: Record<string, unknown> }>(
      '/api/openapi.json',
    );
    expect(status).toBe(200);
    expect(body.openapi).toBe('3.1.0');
    expect(Object.keys(body.paths)).toEqual(
      expect.arrayContaining([
        '/api/operations/{name}',
        '/api/calls',
        '/api/calls/{id}',
        '/api/calls/stream',
        '/api/calls/export',
        '/api/stats',
        '/api/service',
      ]),
    );
    // With and without the trailing slash, every asset the page asks for is served, under the
    // console's policy (nothing inline).
    for (const url of ['/api/docs', '/api/docs/']) {
      const page = await t.inject({ method: 'GET', url });
      expect(page.statusCode, url).toBe(200);
      expect(page.headers['content-security-policy'], url).toContain("style-src 'self';");
      expect(page.headers['content-security-policy'], url).not.toContain('unsafe-inline');
      const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map(
        (m) => new URL(m[1] as string, `http://localhost${url}`).pathname,
      );
      expect(assets.length, url).toBeGreaterThan(4);
      expect(assets, url).toContain('/api/docs/static/swagger-ui-bundle.js');
      for (const asset of assets) {
        expect(asset, asset).toMatch(/^\/api\/docs\/static\//);
        expect((await t.inject({ method: 'GET', url: asset })).statusCode, asset).toBe(200);
      }
    }
    // The document the page loads (its initializer asks for ./json, relative to the page).
    const json = await get<{ paths: Record<string, unknown> }>('/api/docs/json');
    expect(json.status).toBe(200);
    expect(Object.keys(json.body.paths)).toContain('/api/calls');
  });

  it('answers unknown API paths with a problem, never the console page', async () => {
    const res = await t.inject({ method: 'GET', url: '/api/nope', headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});

describe('live tail', () => {
  it('pushes new calls that pass the filters as Server-Sent Events', async () => {
    const t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as AddressInfo).port;
    try {
      const events: string[] = [];
      const cookie = await t.login();
      // Resolves on the first whole `call` event (an event ends with a blank line).
      let onCall: () => void = () => {};
      const firstCall = new Promise<void>((resolve) => {
        onCall = resolve;
      });
      const connected = new Promise<http.IncomingMessage>((resolve) => {
        http.get(
          `http://127.0.0.1:${port}/api/calls/stream?operation=pushNoti`,
          { headers: { cookie } },
          (res) => {
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              events.push(chunk);
              if (/(^|\n)event: call\n[\s\S]*?\n\n/.test(events.join(''))) onCall();
            });
            resolve(res);
          },
        );
      });
      const res = await connected;
      expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      // Answered only once recorded: had the AuthCode call passed the filter, its event would
      // come before pushNoti's on the same stream.
      await fetch(`http://127.0.0.1:${port}/AuthCodeSending.asmx/AuthCode?code=1&phone=%2B447911123456`);
      await fetch(`http://127.0.0.1:${port}/PushNotificationMobile.asmx/pushNoti`);
      await firstCall;
      const text = events.join('');
      const data = text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)));
      expect(data).toHaveLength(1);
      expect(data[0]).toMatchObject({ operation: 'pushNoti', binding: 'http-get', outcome: 'ok' });
    } finally {
      await t.close();
    }
  });
});

describe('console pages', () => {
  it('serves the built console with client-route fallback, never shadowing /api or .asmx', async () => {
    const dist = tempDataDir();
    fs.mkdirSync(path.join(dist.dir, 'assets'));
    fs.writeFileSync(
      path.join(dist.dir, 'index.html'),
      '<!doctype html><title>Console</title><div id="root"></div>',
    );
    fs.writeFileSync(path.join(dist.dir, 'assets', 'app-1234.js'), 'console.log(1)');
    const t = await startTestApp({ CONSOLE_DIR: dist.dir });
    try {
      for (const url of ['/', '/history?operation=AuthCode', '/send/AuthCode']) {
        const res = await t.inject({ method: 'GET', url });
        expect(res.statusCode, url).toBe(200);
        expect(res.body).toContain('<title>Console</title>');
      }
      const asset = await t.inject({ method: 'GET', url: '/assets/app-1234.js' });
      expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect((await t.inject({ method: 'GET', url: '/assets/missing.js' })).statusCode).toBe(404);
      expect((await t.inject({ method: 'GET', url: '/NoSuch.asmx' })).statusCode).toBe(404);
      expect((await t.inject({ method: 'GET', url: '/api/calls/x' })).statusCode).toBe(400);
      // However the API's path is spelled, an unknown one is the API's 404 problem, never the page.
      for (const url of ['//api/users', '///api/calls?x=1', '/API/users', '//api', '/Api/']) {
        const res = await t.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
        expect(res.statusCode, url).toBe(404);
        expect(res.headers['content-type'], url).toMatch(/^application\/problem\+json/);
        expect(res.body, url).not.toContain('<title>Console</title>');
      }
      expect((await t.inject({ method: 'GET', url: '/apiary' })).body).toContain('<title>Console</title>');
    } finally {
      await t.close();
      dist.remove();
    }
  });
});
