// The export read row by row (history.scanRows, routes/api/calls.ts) against the text the mapping
// gives for the rows that scan/scanSummaries read: the same bytes, on both databases, across batch
// boundaries, with text that is quoted, guarded, multi-byte and longer than a batch's first Buffer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSV_HEADER, csvLine, detailJson } from '../src/routes/api/call-mapping.js';
import type { CallRow } from '../src/store/index.js';
import { CALL_T0, callRow, type TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

const CALLS = 250;

describe.each(DIALECTS)('exports, on %s', (dialect) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    const rows = Array.from({ length: CALLS }, (_, i) =>
      callRow({
        // Two calls share each time: the keyset's id breaks the tie at a batch's edge.
        at: CALL_T0 + Math.floor(i / 2) * 1000,
        caller_ip: `203.0.113.${i % 250}`,
        user_agent: i % 7 === 0 ? '=HYPERLINK("x"), "quoted"' : 'ksoap2-android/2.6.0+',
        params: JSON.stringify({
          code: '***',
          phone: `+4479111${String(i).padStart(5, '0')}`,
          name: 'Zoë 👩‍🏫',
        }),
        outcome: i % 17 === 0 ? 'client-error' : 'ok',
        status: i % 17 === 0 ? 400 : 200,
        error: i % 17 === 0 ? 'Missing parameter: phone,\r\nsee "docs"' : null,
        duration_ms: i / 3,
        // One call's message is larger than a batch's first Buffer (16 KiB) on its own.
        request:
          i === 123 ? `POST / HTTP/1.1\r\n\r\n${'é'.repeat(40_000)}` : `POST / HTTP/1.1\r\n\r\n<n>${i}</n>`,
      }),
    );
    await t.app.store.db.insertInto('calls').values(rows).execute();
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  const collect = async <R>(batches: AsyncGenerator<R[]>): Promise<R[]> => {
    const all: R[] = [];
    for await (const batch of batches) all.push(...batch);
    return all;
  };

  it('writes the CSV the mapping gives for every call, newest first', async () => {
    const rows = await collect(t.app.history.scanSummaries({}));
    expect(rows).toHaveLength(CALLS);
    const res = await t.inject({ method: 'GET', url: '/api/calls/export?format=csv' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(CSV_HEADER + rows.map(csvLine).join(''));
  });

  it('writes the JSON the mapping gives for every call, and a filtered export too', async () => {
    const rows = await collect(t.app.history.scan({}));
    const res = await t.inject({ method: 'GET', url: '/api/calls/export?format=json' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(`[\n${rows.map((r) => detailJson(r as CallRow)).join(',\n')}\n]\n`);
    expect((JSON.parse(res.body) as unknown[]).length).toBe(CALLS);

    const errors = await t.inject({
      method: 'GET',
      url: '/api/calls/export?format=json&outcome=client-error',
    });
    expect((JSON.parse(errors.body) as { id: number }[]).map((c) => c.id)).toEqual(
      rows.filter((r) => r.outcome === 'client-error').map((r) => r.id),
    );
    const none = await t.inject({ method: 'GET', url: '/api/calls/export?format=json&ip=192.0.2.99' });
    expect(none.body).toBe('[\n]\n');
  });
});
